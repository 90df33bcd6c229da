module @IrToHlo.662 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<2x8xi64> loc("batch.labels"), %arg1: tensor<48x16xf32> loc("transformer.wte.weight"), %arg2: tensor<16xf32> loc("transformer.ln_f.weight"), %arg3: tensor<16xf32> loc("transformer.h.1.mlp.c_proj.bias"), %arg4: tensor<64x16xf32> loc("transformer.h.1.mlp.c_proj.weight"), %arg5: tensor<f32> loc("lifted.float32[0.7978845834732056]"), %arg6: tensor<f32> loc("lifted.float32[0.044714998453855515]"), %arg7: tensor<64xf32> loc("transformer.h.1.mlp.c_fc.bias"), %arg8: tensor<16x64xf32> loc("transformer.h.1.mlp.c_fc.weight"), %arg9: tensor<16xf32> loc("transformer.h.1.ln_2.weight"), %arg10: tensor<16xf32> loc("transformer.h.0.mlp.c_proj.bias"), %arg11: tensor<64x16xf32> loc("transformer.h.0.mlp.c_proj.weight"), %arg12: tensor<64xf32> loc("transformer.h.0.mlp.c_fc.bias"), %arg13: tensor<16x64xf32> loc("transformer.h.0.mlp.c_fc.weight"), %arg14: tensor<16xf32> loc("transformer.h.0.ln_2.weight"), %arg15: tensor<32x16xf32> loc("transformer.wpe.weight"), %arg16: tensor<2x8xi64> loc("batch.input_ids"), %arg17: tensor<16xf32> loc("transformer.h.0.attn.c_proj.bias"), %arg18: tensor<16x16xf32> loc("transformer.h.0.attn.c_proj.weight"), %arg19: tensor<48xf32> loc("transformer.h.0.attn.c_attn.bias"), %arg20: tensor<16x48xf32> loc("transformer.h.0.attn.c_attn.weight"), %arg21: tensor<16xf32> loc("transformer.h.0.ln_1.weight"), %arg22: tensor<16xf32> loc("transformer.h.0.ln_1.bias"), %arg23: tensor<f32> loc("lifted.float32[-inf]"), %arg24: tensor<f32> loc("lifted.float32[0.5946035385131836]"), %arg25: tensor<16xf32> loc("transformer.h.0.ln_2.bias"), %arg26: tensor<f32> loc("lifted.float32[0.5]"), %arg27: tensor<16xf32> loc("transformer.h.1.attn.c_proj.bias"), %arg28: tensor<16x16xf32> loc("transformer.h.1.attn.c_proj.weight"), %arg29: tensor<48xf32> loc("transformer.h.1.attn.c_attn.bias"), %arg30: tensor<16x48xf32> loc("transformer.h.1.attn.c_attn.weight"), %arg31: tensor<16xf32> loc("transformer.h.1.ln_1.weight"), %arg32: tensor<16xf32> loc("transformer.h.1.ln_1.bias"), %arg33: tensor<16xf32> loc("transformer.h.1.ln_2.bias"), %arg34: tensor<16xf32> loc("transformer.ln_f.bias")) -> tensor<f32> {
    %c = stablehlo.constant dense<-100> : tensor<16xi64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<16x48xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<16x48xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<2x8x64xf32>
    %cst_2 = stablehlo.constant dense<3.000000e+00> : tensor<2x8x64xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x8x8xf32>
    %cst_4 = stablehlo.constant dense<0xFF800000> : tensor<2x2x8x8xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<8x8xf32>
    %c_6 = stablehlo.constant dense<false> : tensor<8x8xi1>
    %c_7 = stablehlo.constant dense<true> : tensor<8x8xi1>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<16xf32>
    %cst_9 = stablehlo.constant dense<1.000000e+00> : tensor<16xf32>
    %c_10 = stablehlo.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xui32>
    %c_11 = stablehlo.constant dense<-100> : tensor<i64>
    %cst_12 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_13 = stablehlo.constant dense<false> : tensor<i1>
    %c_14 = stablehlo.constant dense<true> : tensor<i1>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reshape %arg16 : (tensor<2x8xi64>) -> tensor<16xi64>
    %1 = stablehlo.convert %0 : (tensor<16xi64>) -> tensor<16xui32>
    %2 = "stablehlo.gather"(%arg1, %1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<48x16xf32>, tensor<16xui32>) -> tensor<16x16xf32>
    %3 = stablehlo.reshape %2 : (tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %4 = "stablehlo.gather"(%arg15, %c_10) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<32x16xf32>, tensor<8xui32>) -> tensor<8x16xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [1, 2] : (tensor<8x16xf32>) -> tensor<2x8x16xf32>
    %6 = stablehlo.add %3, %5 : tensor<2x8x16xf32>
    %7 = stablehlo.reshape %6 : (tensor<2x8x16xf32>) -> tensor<1x16x16xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%7, %cst_9, %cst_8) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %8 = stablehlo.broadcast_in_dim %arg22, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %9 = stablehlo.reshape %output : (tensor<1x16x16xf32>) -> tensor<2x8x16xf32>
    %10 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %11 = stablehlo.multiply %9, %10 : tensor<2x8x16xf32>
    %12 = stablehlo.add %8, %11 : tensor<2x8x16xf32>
    %13 = stablehlo.reshape %12 : (tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %14 = stablehlo.dot_general %13, %arg20, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x16xf32>, tensor<16x48xf32>) -> tensor<16x48xf32>
    %15 = stablehlo.broadcast_in_dim %arg19, dims = [1] : (tensor<48xf32>) -> tensor<16x48xf32>
    %16 = stablehlo.add %14, %15 : tensor<16x48xf32>
    %17 = stablehlo.reshape %16 : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
    %18 = stablehlo.slice %17 [0:2, 0:8, 0:16] : (tensor<2x8x48xf32>) -> tensor<2x8x16xf32>
    %19 = stablehlo.reshape %18 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %20 = stablehlo.transpose %19, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,8]{3,1,2,0}"} : (tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %21 = stablehlo.broadcast_in_dim %arg24, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %22 = stablehlo.multiply %20, %21 : tensor<2x2x8x8xf32>
    %23 = stablehlo.reshape %22 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %24 = stablehlo.slice %17 [0:2, 0:8, 16:32] : (tensor<2x8x48xf32>) -> tensor<2x8x16xf32>
    %25 = stablehlo.reshape %24 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %26 = stablehlo.transpose %25, dims = [0, 2, 3, 1] : (tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %27 = stablehlo.multiply %26, %21 : tensor<2x2x8x8xf32>
    %28 = stablehlo.reshape %27 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %29 = stablehlo.dot_general %23, %28, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %30 = stablehlo.reshape %29 : (tensor<4x8x8xf32>) -> tensor<2x2x8x8xf32>
    %31 = stablehlo.iota dim = 0 : tensor<8xi32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [0] : (tensor<8xi32>) -> tensor<8x8xi32>
    %33 = stablehlo.broadcast_in_dim %31, dims = [1] : (tensor<8xi32>) -> tensor<8x8xi32>
    %34 = stablehlo.compare  GE, %32, %33 : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
    %35 = stablehlo.select %34, %c_7, %c_6 : tensor<8x8xi1>, tensor<8x8xi1>
    %36 = stablehlo.broadcast_in_dim %arg23, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %37 = stablehlo.select %35, %cst_5, %36 : tensor<8x8xi1>, tensor<8x8xf32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [2, 3] : (tensor<8x8xf32>) -> tensor<2x2x8x8xf32>
    %39 = stablehlo.add %30, %38 : tensor<2x2x8x8xf32>
    %40 = stablehlo.compare  EQ, %39, %cst_4 : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xi1>
    %41 = stablehlo.reduce(%40 init: %c_14) across dimensions = [3] : (tensor<2x2x8x8xi1>, tensor<i1>) -> tensor<2x2x8xi1>
     reducer(%arg35: tensor<i1>, %arg36: tensor<i1>)  {
      %206 = stablehlo.and %arg35, %arg36 : tensor<i1>
      %207 = stablehlo.select %206, %c_14, %c_13 : tensor<i1>, tensor<i1>
      stablehlo.return %207 : tensor<i1>
    }
    %42 = stablehlo.broadcast_in_dim %41, dims = [0, 1, 2] : (tensor<2x2x8xi1>) -> tensor<2x2x8x8xi1>
    %43 = stablehlo.reduce(%39 init: %cst_12) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
    %44 = stablehlo.broadcast_in_dim %43, dims = [0, 1, 2] : (tensor<2x2x8xf32>) -> tensor<2x2x8x8xf32>
    %45 = stablehlo.subtract %39, %44 : tensor<2x2x8x8xf32>
    %46 = stablehlo.exponential %45 : tensor<2x2x8x8xf32>
    %47 = stablehlo.reduce(%46 init: %cst_15) applies stablehlo.add across dimensions = [3] : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
    %48 = stablehlo.broadcast_in_dim %47, dims = [0, 1, 2] : (tensor<2x2x8xf32>) -> tensor<2x2x8x8xf32>
    %49 = stablehlo.divide %46, %48 : tensor<2x2x8x8xf32>
    %50 = stablehlo.select %42, %cst_3, %49 : tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>
    %51 = stablehlo.reshape %50 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %52 = stablehlo.slice %17 [0:2, 0:8, 32:48] : (tensor<2x8x48xf32>) -> tensor<2x8x16xf32>
    %53 = stablehlo.reshape %52 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %54 = stablehlo.transpose %53, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,8]{3,1,2,0}"} : (tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %55 = stablehlo.reshape %54 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %56 = stablehlo.dot_general %51, %55, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %57 = stablehlo.reshape %56 : (tensor<4x8x8xf32>) -> tensor<2x2x8x8xf32>
    %58 = stablehlo.transpose %57, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,8,2,8]{3,1,2,0}"} : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
    %59 = stablehlo.reshape %58 : (tensor<2x8x2x8xf32>) -> tensor<16x16xf32>
    %60 = stablehlo.dot_general %59, %arg18, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %61 = stablehlo.broadcast_in_dim %arg17, dims = [1] : (tensor<16xf32>) -> tensor<16x16xf32>
    %62 = stablehlo.add %60, %61 : tensor<16x16xf32>
    %63 = stablehlo.reshape %62 : (tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %64 = stablehlo.add %63, %6 : tensor<2x8x16xf32>
    %65 = stablehlo.reshape %64 : (tensor<2x8x16xf32>) -> tensor<1x16x16xf32>
    %output_16, %batch_mean_17, %batch_var_18 = "stablehlo.batch_norm_training"(%65, %cst_9, %cst_8) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %66 = stablehlo.broadcast_in_dim %arg25, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %67 = stablehlo.reshape %output_16 : (tensor<1x16x16xf32>) -> tensor<2x8x16xf32>
    %68 = stablehlo.broadcast_in_dim %arg14, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %69 = stablehlo.multiply %67, %68 : tensor<2x8x16xf32>
    %70 = stablehlo.add %66, %69 : tensor<2x8x16xf32>
    %71 = stablehlo.reshape %70 : (tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %72 = stablehlo.dot_general %71, %arg13, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x16xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %73 = stablehlo.broadcast_in_dim %arg12, dims = [1] : (tensor<64xf32>) -> tensor<16x64xf32>
    %74 = stablehlo.add %72, %73 : tensor<16x64xf32>
    %75 = stablehlo.reshape %74 : (tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %76 = stablehlo.broadcast_in_dim %arg26, dims = [] : (tensor<f32>) -> tensor<2x8x64xf32>
    %77 = stablehlo.multiply %75, %76 : tensor<2x8x64xf32>
    %78 = stablehlo.power %75, %cst_2 : tensor<2x8x64xf32>
    %79 = stablehlo.broadcast_in_dim %arg6, dims = [] : (tensor<f32>) -> tensor<2x8x64xf32>
    %80 = stablehlo.multiply %78, %79 : tensor<2x8x64xf32>
    %81 = stablehlo.add %75, %80 : tensor<2x8x64xf32>
    %82 = stablehlo.broadcast_in_dim %arg5, dims = [] : (tensor<f32>) -> tensor<2x8x64xf32>
    %83 = stablehlo.multiply %81, %82 : tensor<2x8x64xf32>
    %84 = stablehlo.tanh %83 : tensor<2x8x64xf32>
    %85 = stablehlo.add %84, %cst_1 : tensor<2x8x64xf32>
    %86 = stablehlo.multiply %77, %85 : tensor<2x8x64xf32>
    %87 = stablehlo.reshape %86 : (tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %88 = stablehlo.dot_general %87, %arg11, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
    %89 = stablehlo.broadcast_in_dim %arg10, dims = [1] : (tensor<16xf32>) -> tensor<16x16xf32>
    %90 = stablehlo.add %88, %89 : tensor<16x16xf32>
    %91 = stablehlo.reshape %90 : (tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %92 = stablehlo.add %64, %91 : tensor<2x8x16xf32>
    %93 = stablehlo.optimization_barrier %92 : tensor<2x8x16xf32>
    %94 = stablehlo.custom_call @LayoutConstraint(%93) {backend_config = "", mhlo.frontend_attributes = {hlopipe.stage_boundary = "true"}} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %95 = stablehlo.reshape %94 : (tensor<2x8x16xf32>) -> tensor<1x16x16xf32>
    %output_19, %batch_mean_20, %batch_var_21 = "stablehlo.batch_norm_training"(%95, %cst_9, %cst_8) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %96 = stablehlo.broadcast_in_dim %arg32, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %97 = stablehlo.reshape %output_19 : (tensor<1x16x16xf32>) -> tensor<2x8x16xf32>
    %98 = stablehlo.broadcast_in_dim %arg31, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %99 = stablehlo.multiply %97, %98 : tensor<2x8x16xf32>
    %100 = stablehlo.add %96, %99 : tensor<2x8x16xf32>
    %101 = stablehlo.reshape %100 : (tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %102 = stablehlo.dot_general %101, %arg30, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x16xf32>, tensor<16x48xf32>) -> tensor<16x48xf32>
    %103 = stablehlo.broadcast_in_dim %arg29, dims = [1] : (tensor<48xf32>) -> tensor<16x48xf32>
    %104 = stablehlo.add %102, %103 : tensor<16x48xf32>
    %105 = stablehlo.reshape %104 : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
    %106 = stablehlo.slice %105 [0:2, 0:8, 0:16] : (tensor<2x8x48xf32>) -> tensor<2x8x16xf32>
    %107 = stablehlo.reshape %106 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %108 = stablehlo.transpose %107, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,8]{3,1,2,0}"} : (tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %109 = stablehlo.multiply %108, %21 : tensor<2x2x8x8xf32>
    %110 = stablehlo.reshape %109 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %111 = stablehlo.slice %105 [0:2, 0:8, 16:32] : (tensor<2x8x48xf32>) -> tensor<2x8x16xf32>
    %112 = stablehlo.reshape %111 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %113 = stablehlo.transpose %112, dims = [0, 2, 3, 1] : (tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %114 = stablehlo.multiply %113, %21 : tensor<2x2x8x8xf32>
    %115 = stablehlo.reshape %114 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %116 = stablehlo.dot_general %110, %115, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %117 = stablehlo.reshape %116 : (tensor<4x8x8xf32>) -> tensor<2x2x8x8xf32>
    %118 = stablehlo.add %117, %38 : tensor<2x2x8x8xf32>
    %119 = stablehlo.compare  EQ, %118, %cst_4 : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xi1>
    %120 = stablehlo.reduce(%119 init: %c_14) across dimensions = [3] : (tensor<2x2x8x8xi1>, tensor<i1>) -> tensor<2x2x8xi1>
     reducer(%arg35: tensor<i1>, %arg36: tensor<i1>)  {
      %206 = stablehlo.and %arg35, %arg36 : tensor<i1>
      %207 = stablehlo.select %206, %c_14, %c_13 : tensor<i1>, tensor<i1>
      stablehlo.return %207 : tensor<i1>
    }
    %121 = stablehlo.broadcast_in_dim %120, dims = [0, 1, 2] : (tensor<2x2x8xi1>) -> tensor<2x2x8x8xi1>
    %122 = stablehlo.reduce(%118 init: %cst_12) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
    %123 = stablehlo.broadcast_in_dim %122, dims = [0, 1, 2] : (tensor<2x2x8xf32>) -> tensor<2x2x8x8xf32>
    %124 = stablehlo.subtract %118, %123 : tensor<2x2x8x8xf32>
    %125 = stablehlo.exponential %124 : tensor<2x2x8x8xf32>
    %126 = stablehlo.reduce(%125 init: %cst_15) applies stablehlo.add across dimensions = [3] : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
    %127 = stablehlo.broadcast_in_dim %126, dims = [0, 1, 2] : (tensor<2x2x8xf32>) -> tensor<2x2x8x8xf32>
    %128 = stablehlo.divide %125, %127 : tensor<2x2x8x8xf32>
    %129 = stablehlo.select %121, %cst_3, %128 : tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>
    %130 = stablehlo.reshape %129 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %131 = stablehlo.slice %105 [0:2, 0:8, 32:48] : (tensor<2x8x48xf32>) -> tensor<2x8x16xf32>
    %132 = stablehlo.reshape %131 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %133 = stablehlo.transpose %132, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,8]{3,1,2,0}"} : (tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %134 = stablehlo.reshape %133 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %135 = stablehlo.dot_general %130, %134, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %136 = stablehlo.reshape %135 : (tensor<4x8x8xf32>) -> tensor<2x2x8x8xf32>
    %137 = stablehlo.transpose %136, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,8,2,8]{3,1,2,0}"} : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
    %138 = stablehlo.reshape %137 : (tensor<2x8x2x8xf32>) -> tensor<16x16xf32>
    %139 = stablehlo.dot_general %138, %arg28, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %140 = stablehlo.broadcast_in_dim %arg27, dims = [1] : (tensor<16xf32>) -> tensor<16x16xf32>
    %141 = stablehlo.add %139, %140 : tensor<16x16xf32>
    %142 = stablehlo.reshape %141 : (tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %143 = stablehlo.add %142, %94 : tensor<2x8x16xf32>
    %144 = stablehlo.reshape %143 : (tensor<2x8x16xf32>) -> tensor<1x16x16xf32>
    %output_22, %batch_mean_23, %batch_var_24 = "stablehlo.batch_norm_training"(%144, %cst_9, %cst_8) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %145 = stablehlo.broadcast_in_dim %arg33, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %146 = stablehlo.reshape %output_22 : (tensor<1x16x16xf32>) -> tensor<2x8x16xf32>
    %147 = stablehlo.broadcast_in_dim %arg9, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %148 = stablehlo.multiply %146, %147 : tensor<2x8x16xf32>
    %149 = stablehlo.add %145, %148 : tensor<2x8x16xf32>
    %150 = stablehlo.reshape %149 : (tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %151 = stablehlo.dot_general %150, %arg8, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x16xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %152 = stablehlo.broadcast_in_dim %arg7, dims = [1] : (tensor<64xf32>) -> tensor<16x64xf32>
    %153 = stablehlo.add %151, %152 : tensor<16x64xf32>
    %154 = stablehlo.reshape %153 : (tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %155 = stablehlo.multiply %154, %76 : tensor<2x8x64xf32>
    %156 = stablehlo.power %154, %cst_2 : tensor<2x8x64xf32>
    %157 = stablehlo.multiply %156, %79 : tensor<2x8x64xf32>
    %158 = stablehlo.add %154, %157 : tensor<2x8x64xf32>
    %159 = stablehlo.multiply %158, %82 : tensor<2x8x64xf32>
    %160 = stablehlo.tanh %159 : tensor<2x8x64xf32>
    %161 = stablehlo.add %160, %cst_1 : tensor<2x8x64xf32>
    %162 = stablehlo.multiply %155, %161 : tensor<2x8x64xf32>
    %163 = stablehlo.reshape %162 : (tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %164 = stablehlo.dot_general %163, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
    %165 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<16xf32>) -> tensor<16x16xf32>
    %166 = stablehlo.add %164, %165 : tensor<16x16xf32>
    %167 = stablehlo.reshape %166 : (tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %168 = stablehlo.add %143, %167 : tensor<2x8x16xf32>
    %169 = stablehlo.reshape %168 : (tensor<2x8x16xf32>) -> tensor<1x16x16xf32>
    %output_25, %batch_mean_26, %batch_var_27 = "stablehlo.batch_norm_training"(%169, %cst_9, %cst_8) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %170 = stablehlo.pad %arg0, %c_11, low = [0, 0], high = [0, 1], interior = [0, 0] : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x9xi64>
    %171 = stablehlo.slice %170 [0:2, 1:9] : (tensor<2x9xi64>) -> tensor<2x8xi64>
    %172 = stablehlo.reshape %171 : (tensor<2x8xi64>) -> tensor<16xi64>
    %173 = stablehlo.broadcast_in_dim %172, dims = [0] : (tensor<16xi64>) -> tensor<16x48xi64>
    %174 = stablehlo.iota dim = 0 : tensor<48xi64>
    %175 = stablehlo.broadcast_in_dim %174, dims = [1] : (tensor<48xi64>) -> tensor<16x48xi64>
    %176 = stablehlo.compare  EQ, %173, %175 : (tensor<16x48xi64>, tensor<16x48xi64>) -> tensor<16x48xi1>
    %177 = stablehlo.select %176, %cst_0, %cst : tensor<16x48xi1>, tensor<16x48xf32>
    %178 = stablehlo.compare  NE, %177, %cst_0 : (tensor<16x48xf32>, tensor<16x48xf32>) -> tensor<16x48xi1>
    %179 = stablehlo.negate %177 : tensor<16x48xf32>
    %180 = stablehlo.broadcast_in_dim %arg34, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %181 = stablehlo.reshape %output_25 : (tensor<1x16x16xf32>) -> tensor<2x8x16xf32>
    %182 = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %183 = stablehlo.multiply %181, %182 : tensor<2x8x16xf32>
    %184 = stablehlo.add %180, %183 : tensor<2x8x16xf32>
    %185 = stablehlo.reshape %184 : (tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %186 = stablehlo.transpose %arg1, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,48]{0,1}"} : (tensor<48x16xf32>) -> tensor<16x48xf32>
    %187 = stablehlo.dot_general %185, %186, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x16xf32>, tensor<16x48xf32>) -> tensor<16x48xf32>
    %188 = stablehlo.reduce(%187 init: %cst_12) applies stablehlo.maximum across dimensions = [1] : (tensor<16x48xf32>, tensor<f32>) -> tensor<16xf32>
    %189 = stablehlo.broadcast_in_dim %188, dims = [0] : (tensor<16xf32>) -> tensor<16x48xf32>
    %190 = stablehlo.subtract %187, %189 : tensor<16x48xf32>
    %191 = stablehlo.exponential %190 : tensor<16x48xf32>
    %192 = stablehlo.reduce(%191 init: %cst_15) applies stablehlo.add across dimensions = [1] : (tensor<16x48xf32>, tensor<f32>) -> tensor<16xf32>
    %193 = stablehlo.log %192 : tensor<16xf32>
    %194 = stablehlo.broadcast_in_dim %193, dims = [0] : (tensor<16xf32>) -> tensor<16x48xf32>
    %195 = stablehlo.subtract %190, %194 : tensor<16x48xf32>
    %196 = stablehlo.multiply %179, %195 : tensor<16x48xf32>
    %197 = stablehlo.select %178, %cst, %196 : tensor<16x48xi1>, tensor<16x48xf32>
    %198 = stablehlo.compare  NE, %172, %c : (tensor<16xi64>, tensor<16xi64>) -> tensor<16xi1>
    %199 = stablehlo.broadcast_in_dim %198, dims = [0] : (tensor<16xi1>) -> tensor<16x48xi1>
    %200 = stablehlo.select %199, %cst_0, %cst : tensor<16x48xi1>, tensor<16x48xf32>
    %201 = stablehlo.multiply %200, %177 : tensor<16x48xf32>
    %202 = stablehlo.multiply %197, %201 : tensor<16x48xf32>
    %203 = stablehlo.reduce(%202 init: %cst_15) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x48xf32>, tensor<f32>) -> tensor<f32>
    %204 = stablehlo.reduce(%201 init: %cst_15) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x48xf32>, tensor<f32>) -> tensor<f32>
    %205 = stablehlo.divide %203, %204 : tensor<f32>
    return %205 : tensor<f32>
  }
}
