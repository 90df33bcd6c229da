module @IrToHlo.656 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<48x16xf32> loc("transformer.wte.weight"), %arg1: tensor<16xf32> loc("transformer.ln_f.weight"), %arg2: tensor<16xf32> loc("transformer.h.1.mlp.c_proj.bias"), %arg3: tensor<64x16xf32> loc("transformer.h.1.mlp.c_proj.weight"), %arg4: tensor<f32> loc("lifted.float32[0.7978845834732056]"), %arg5: tensor<f32> loc("lifted.float32[0.044714998453855515]"), %arg6: tensor<64xf32> loc("transformer.h.1.mlp.c_fc.bias"), %arg7: tensor<16x64xf32> loc("transformer.h.1.mlp.c_fc.weight"), %arg8: tensor<16xf32> loc("transformer.h.1.ln_2.weight"), %arg9: tensor<16xf32> loc("transformer.h.0.mlp.c_proj.bias"), %arg10: tensor<64x16xf32> loc("transformer.h.0.mlp.c_proj.weight"), %arg11: tensor<64xf32> loc("transformer.h.0.mlp.c_fc.bias"), %arg12: tensor<16x64xf32> loc("transformer.h.0.mlp.c_fc.weight"), %arg13: tensor<16xf32> loc("transformer.h.0.ln_2.weight"), %arg14: tensor<32x16xf32> loc("transformer.wpe.weight"), %arg15: tensor<2x5xi64> loc("prompt"), %arg16: tensor<16xf32> loc("transformer.h.0.attn.c_proj.bias"), %arg17: tensor<16x16xf32> loc("transformer.h.0.attn.c_proj.weight"), %arg18: tensor<48xf32> loc("transformer.h.0.attn.c_attn.bias"), %arg19: tensor<16x48xf32> loc("transformer.h.0.attn.c_attn.weight"), %arg20: tensor<16xf32> loc("transformer.h.0.ln_1.weight"), %arg21: tensor<16xf32> loc("transformer.h.0.ln_1.bias"), %arg22: tensor<f32> loc("lifted.float32[-inf]"), %arg23: tensor<f32> loc("lifted.float32[0.5946035385131836]"), %arg24: tensor<16xf32> loc("transformer.h.0.ln_2.bias"), %arg25: tensor<f32> loc("lifted.float32[0.5]"), %arg26: tensor<16xf32> loc("transformer.h.1.attn.c_proj.bias"), %arg27: tensor<16x16xf32> loc("transformer.h.1.attn.c_proj.weight"), %arg28: tensor<48xf32> loc("transformer.h.1.attn.c_attn.bias"), %arg29: tensor<16x48xf32> loc("transformer.h.1.attn.c_attn.weight"), %arg30: tensor<16xf32> loc("transformer.h.1.ln_1.weight"), %arg31: tensor<16xf32> loc("transformer.h.1.ln_1.bias"), %arg32: tensor<16xf32> loc("transformer.h.1.ln_2.bias"), %arg33: tensor<16xf32> loc("transformer.ln_f.bias"), %arg34: tensor<i64> loc("lifted.int64[5]")) -> (tensor<2x48xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<i64>, tensor<i64>) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<2x5x64xf32>
    %cst_0 = stablehlo.constant dense<3.000000e+00> : tensor<2x5x64xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x5x5xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<2x2x5x5xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<5x5xf32>
    %c = stablehlo.constant dense<false> : tensor<5x5xi1>
    %c_4 = stablehlo.constant dense<true> : tensor<5x5xi1>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x12x8xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<10xf32>
    %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<10xf32>
    %c_8 = stablehlo.constant dense<[0, 1, 2, 3, 4]> : tensor<5xui32>
    %cst_9 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_10 = stablehlo.constant dense<false> : tensor<i1>
    %c_11 = stablehlo.constant dense<true> : tensor<i1>
    %c_12 = stablehlo.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi64>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reshape %arg15 : (tensor<2x5xi64>) -> tensor<10xi64>
    %1 = stablehlo.convert %0 : (tensor<10xi64>) -> tensor<10xui32>
    %2 = "stablehlo.gather"(%arg0, %1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<48x16xf32>, tensor<10xui32>) -> tensor<10x16xf32>
    %3 = stablehlo.reshape %2 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %4 = "stablehlo.gather"(%arg14, %c_8) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<32x16xf32>, tensor<5xui32>) -> tensor<5x16xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [1, 2] : (tensor<5x16xf32>) -> tensor<2x5x16xf32>
    %6 = stablehlo.add %3, %5 : tensor<2x5x16xf32>
    %7 = stablehlo.reshape %6 : (tensor<2x5x16xf32>) -> tensor<1x10x16xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%7, %cst_7, %cst_6) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>)
    %8 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %9 = stablehlo.reshape %output : (tensor<1x10x16xf32>) -> tensor<2x5x16xf32>
    %10 = stablehlo.broadcast_in_dim %arg20, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %11 = stablehlo.multiply %9, %10 : tensor<2x5x16xf32>
    %12 = stablehlo.add %8, %11 : tensor<2x5x16xf32>
    %13 = stablehlo.reshape %12 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %14 = stablehlo.dot_general %13, %arg19, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x48xf32>) -> tensor<10x48xf32>
    %15 = stablehlo.broadcast_in_dim %arg18, dims = [1] : (tensor<48xf32>) -> tensor<10x48xf32>
    %16 = stablehlo.add %14, %15 : tensor<10x48xf32>
    %17 = stablehlo.reshape %16 : (tensor<10x48xf32>) -> tensor<2x5x48xf32>
    %18 = stablehlo.slice %17 [0:2, 0:5, 0:16] : (tensor<2x5x48xf32>) -> tensor<2x5x16xf32>
    %19 = stablehlo.reshape %18 : (tensor<2x5x16xf32>) -> tensor<2x5x2x8xf32>
    %20 = stablehlo.transpose %19, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,8]{3,1,2,0}"} : (tensor<2x5x2x8xf32>) -> tensor<2x2x5x8xf32>
    %21 = stablehlo.broadcast_in_dim %arg23, dims = [] : (tensor<f32>) -> tensor<2x2x5x8xf32>
    %22 = stablehlo.multiply %20, %21 : tensor<2x2x5x8xf32>
    %23 = stablehlo.reshape %22 : (tensor<2x2x5x8xf32>) -> tensor<4x5x8xf32>
    %24 = stablehlo.slice %17 [0:2, 0:5, 16:32] : (tensor<2x5x48xf32>) -> tensor<2x5x16xf32>
    %25 = stablehlo.reshape %24 : (tensor<2x5x16xf32>) -> tensor<2x5x2x8xf32>
    %26 = stablehlo.transpose %25, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,8]{3,1,2,0}"} : (tensor<2x5x2x8xf32>) -> tensor<2x2x5x8xf32>
    %27 = "stablehlo.scatter"(%cst_5, %c_12, %26) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg35: tensor<f32>, %arg36: tensor<f32>):
      stablehlo.return %arg36 : tensor<f32>
    }) : (tensor<2x2x12x8xf32>, tensor<5xi64>, tensor<2x2x5x8xf32>) -> tensor<2x2x12x8xf32>
    %28 = stablehlo.slice %27 [0:2, 0:2, 0:5, 0:8] : (tensor<2x2x12x8xf32>) -> tensor<2x2x5x8xf32>
    %29 = stablehlo.transpose %28, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,5]{2,3,1,0}"} : (tensor<2x2x5x8xf32>) -> tensor<2x2x8x5xf32>
    %30 = stablehlo.broadcast_in_dim %arg23, dims = [] : (tensor<f32>) -> tensor<2x2x8x5xf32>
    %31 = stablehlo.multiply %29, %30 : tensor<2x2x8x5xf32>
    %32 = stablehlo.reshape %31 : (tensor<2x2x8x5xf32>) -> tensor<4x8x5xf32>
    %33 = stablehlo.dot_general %23, %32, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x5x8xf32>, tensor<4x8x5xf32>) -> tensor<4x5x5xf32>
    %34 = stablehlo.reshape %33 : (tensor<4x5x5xf32>) -> tensor<2x2x5x5xf32>
    %35 = stablehlo.iota dim = 0 : tensor<5xi32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [0] : (tensor<5xi32>) -> tensor<5x5xi32>
    %37 = stablehlo.broadcast_in_dim %35, dims = [1] : (tensor<5xi32>) -> tensor<5x5xi32>
    %38 = stablehlo.compare  GE, %36, %37 : (tensor<5x5xi32>, tensor<5x5xi32>) -> tensor<5x5xi1>
    %39 = stablehlo.select %38, %c_4, %c : tensor<5x5xi1>, tensor<5x5xi1>
    %40 = stablehlo.broadcast_in_dim %arg22, dims = [] : (tensor<f32>) -> tensor<5x5xf32>
    %41 = stablehlo.select %39, %cst_3, %40 : tensor<5x5xi1>, tensor<5x5xf32>
    %42 = stablehlo.broadcast_in_dim %41, dims = [2, 3] : (tensor<5x5xf32>) -> tensor<2x2x5x5xf32>
    %43 = stablehlo.add %34, %42 : tensor<2x2x5x5xf32>
    %44 = stablehlo.compare  EQ, %43, %cst_2 : (tensor<2x2x5x5xf32>, tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xi1>
    %45 = stablehlo.reduce(%44 init: %c_11) across dimensions = [3] : (tensor<2x2x5x5xi1>, tensor<i1>) -> tensor<2x2x5xi1>
     reducer(%arg35: tensor<i1>, %arg36: tensor<i1>)  {
      %192 = stablehlo.and %arg35, %arg36 : tensor<i1>
      %193 = stablehlo.select %192, %c_11, %c_10 : tensor<i1>, tensor<i1>
      stablehlo.return %193 : tensor<i1>
    }
    %46 = stablehlo.broadcast_in_dim %45, dims = [0, 1, 2] : (tensor<2x2x5xi1>) -> tensor<2x2x5x5xi1>
    %47 = stablehlo.reduce(%43 init: %cst_9) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5xf32>
    %48 = stablehlo.broadcast_in_dim %47, dims = [0, 1, 2] : (tensor<2x2x5xf32>) -> tensor<2x2x5x5xf32>
    %49 = stablehlo.subtract %43, %48 : tensor<2x2x5x5xf32>
    %50 = stablehlo.exponential %49 : tensor<2x2x5x5xf32>
    %51 = stablehlo.reduce(%50 init: %cst_13) applies stablehlo.add across dimensions = [3] : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5xf32>
    %52 = stablehlo.broadcast_in_dim %51, dims = [0, 1, 2] : (tensor<2x2x5xf32>) -> tensor<2x2x5x5xf32>
    %53 = stablehlo.divide %50, %52 : tensor<2x2x5x5xf32>
    %54 = stablehlo.select %46, %cst_1, %53 : tensor<2x2x5x5xi1>, tensor<2x2x5x5xf32>
    %55 = stablehlo.reshape %54 : (tensor<2x2x5x5xf32>) -> tensor<4x5x5xf32>
    %56 = stablehlo.slice %17 [0:2, 0:5, 32:48] : (tensor<2x5x48xf32>) -> tensor<2x5x16xf32>
    %57 = stablehlo.reshape %56 : (tensor<2x5x16xf32>) -> tensor<2x5x2x8xf32>
    %58 = stablehlo.transpose %57, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,8]{3,1,2,0}"} : (tensor<2x5x2x8xf32>) -> tensor<2x2x5x8xf32>
    %59 = "stablehlo.scatter"(%cst_5, %c_12, %58) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg35: tensor<f32>, %arg36: tensor<f32>):
      stablehlo.return %arg36 : tensor<f32>
    }) : (tensor<2x2x12x8xf32>, tensor<5xi64>, tensor<2x2x5x8xf32>) -> tensor<2x2x12x8xf32>
    %60 = stablehlo.slice %59 [0:2, 0:2, 0:5, 0:8] : (tensor<2x2x12x8xf32>) -> tensor<2x2x5x8xf32>
    %61 = stablehlo.reshape %60 : (tensor<2x2x5x8xf32>) -> tensor<4x5x8xf32>
    %62 = stablehlo.dot_general %55, %61, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x5x5xf32>, tensor<4x5x8xf32>) -> tensor<4x5x8xf32>
    %63 = stablehlo.reshape %62 : (tensor<4x5x8xf32>) -> tensor<2x2x5x8xf32>
    %64 = stablehlo.transpose %63, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,2,8]{3,1,2,0}"} : (tensor<2x2x5x8xf32>) -> tensor<2x5x2x8xf32>
    %65 = stablehlo.reshape %64 : (tensor<2x5x2x8xf32>) -> tensor<10x16xf32>
    %66 = stablehlo.dot_general %65, %arg17, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %67 = stablehlo.broadcast_in_dim %arg16, dims = [1] : (tensor<16xf32>) -> tensor<10x16xf32>
    %68 = stablehlo.add %66, %67 : tensor<10x16xf32>
    %69 = stablehlo.reshape %68 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %70 = stablehlo.add %69, %6 : tensor<2x5x16xf32>
    %71 = stablehlo.reshape %70 : (tensor<2x5x16xf32>) -> tensor<1x10x16xf32>
    %output_14, %batch_mean_15, %batch_var_16 = "stablehlo.batch_norm_training"(%71, %cst_7, %cst_6) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>)
    %72 = stablehlo.broadcast_in_dim %arg24, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %73 = stablehlo.reshape %output_14 : (tensor<1x10x16xf32>) -> tensor<2x5x16xf32>
    %74 = stablehlo.broadcast_in_dim %arg13, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %75 = stablehlo.multiply %73, %74 : tensor<2x5x16xf32>
    %76 = stablehlo.add %72, %75 : tensor<2x5x16xf32>
    %77 = stablehlo.reshape %76 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %78 = stablehlo.dot_general %77, %arg12, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x64xf32>) -> tensor<10x64xf32>
    %79 = stablehlo.broadcast_in_dim %arg11, dims = [1] : (tensor<64xf32>) -> tensor<10x64xf32>
    %80 = stablehlo.add %78, %79 : tensor<10x64xf32>
    %81 = stablehlo.reshape %80 : (tensor<10x64xf32>) -> tensor<2x5x64xf32>
    %82 = stablehlo.broadcast_in_dim %arg25, dims = [] : (tensor<f32>) -> tensor<2x5x64xf32>
    %83 = stablehlo.multiply %81, %82 : tensor<2x5x64xf32>
    %84 = stablehlo.power %81, %cst_0 : tensor<2x5x64xf32>
    %85 = stablehlo.broadcast_in_dim %arg5, dims = [] : (tensor<f32>) -> tensor<2x5x64xf32>
    %86 = stablehlo.multiply %84, %85 : tensor<2x5x64xf32>
    %87 = stablehlo.add %81, %86 : tensor<2x5x64xf32>
    %88 = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<f32>) -> tensor<2x5x64xf32>
    %89 = stablehlo.multiply %87, %88 : tensor<2x5x64xf32>
    %90 = stablehlo.tanh %89 : tensor<2x5x64xf32>
    %91 = stablehlo.add %90, %cst : tensor<2x5x64xf32>
    %92 = stablehlo.multiply %83, %91 : tensor<2x5x64xf32>
    %93 = stablehlo.reshape %92 : (tensor<2x5x64xf32>) -> tensor<10x64xf32>
    %94 = stablehlo.dot_general %93, %arg10, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x64xf32>, tensor<64x16xf32>) -> tensor<10x16xf32>
    %95 = stablehlo.broadcast_in_dim %arg9, dims = [1] : (tensor<16xf32>) -> tensor<10x16xf32>
    %96 = stablehlo.add %94, %95 : tensor<10x16xf32>
    %97 = stablehlo.reshape %96 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %98 = stablehlo.add %70, %97 : tensor<2x5x16xf32>
    %99 = stablehlo.optimization_barrier %98 : tensor<2x5x16xf32>
    %100 = stablehlo.custom_call @LayoutConstraint(%99) {backend_config = "", mhlo.frontend_attributes = {hlopipe.stage_boundary = "true"}} : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
    %101 = stablehlo.reshape %100 : (tensor<2x5x16xf32>) -> tensor<1x10x16xf32>
    %output_17, %batch_mean_18, %batch_var_19 = "stablehlo.batch_norm_training"(%101, %cst_7, %cst_6) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>)
    %102 = stablehlo.broadcast_in_dim %arg31, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %103 = stablehlo.reshape %output_17 : (tensor<1x10x16xf32>) -> tensor<2x5x16xf32>
    %104 = stablehlo.broadcast_in_dim %arg30, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %105 = stablehlo.multiply %103, %104 : tensor<2x5x16xf32>
    %106 = stablehlo.add %102, %105 : tensor<2x5x16xf32>
    %107 = stablehlo.reshape %106 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %108 = stablehlo.dot_general %107, %arg29, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x48xf32>) -> tensor<10x48xf32>
    %109 = stablehlo.broadcast_in_dim %arg28, dims = [1] : (tensor<48xf32>) -> tensor<10x48xf32>
    %110 = stablehlo.add %108, %109 : tensor<10x48xf32>
    %111 = stablehlo.reshape %110 : (tensor<10x48xf32>) -> tensor<2x5x48xf32>
    %112 = stablehlo.slice %111 [0:2, 0:5, 0:16] : (tensor<2x5x48xf32>) -> tensor<2x5x16xf32>
    %113 = stablehlo.reshape %112 : (tensor<2x5x16xf32>) -> tensor<2x5x2x8xf32>
    %114 = stablehlo.transpose %113, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,8]{3,1,2,0}"} : (tensor<2x5x2x8xf32>) -> tensor<2x2x5x8xf32>
    %115 = stablehlo.multiply %114, %21 : tensor<2x2x5x8xf32>
    %116 = stablehlo.reshape %115 : (tensor<2x2x5x8xf32>) -> tensor<4x5x8xf32>
    %117 = stablehlo.slice %111 [0:2, 0:5, 16:32] : (tensor<2x5x48xf32>) -> tensor<2x5x16xf32>
    %118 = stablehlo.reshape %117 : (tensor<2x5x16xf32>) -> tensor<2x5x2x8xf32>
    %119 = stablehlo.transpose %118, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,8]{3,1,2,0}"} : (tensor<2x5x2x8xf32>) -> tensor<2x2x5x8xf32>
    %120 = "stablehlo.scatter"(%cst_5, %c_12, %119) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg35: tensor<f32>, %arg36: tensor<f32>):
      stablehlo.return %arg36 : tensor<f32>
    }) : (tensor<2x2x12x8xf32>, tensor<5xi64>, tensor<2x2x5x8xf32>) -> tensor<2x2x12x8xf32>
    %121 = stablehlo.slice %120 [0:2, 0:2, 0:5, 0:8] : (tensor<2x2x12x8xf32>) -> tensor<2x2x5x8xf32>
    %122 = stablehlo.transpose %121, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,5]{2,3,1,0}"} : (tensor<2x2x5x8xf32>) -> tensor<2x2x8x5xf32>
    %123 = stablehlo.multiply %122, %30 : tensor<2x2x8x5xf32>
    %124 = stablehlo.reshape %123 : (tensor<2x2x8x5xf32>) -> tensor<4x8x5xf32>
    %125 = stablehlo.dot_general %116, %124, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x5x8xf32>, tensor<4x8x5xf32>) -> tensor<4x5x5xf32>
    %126 = stablehlo.reshape %125 : (tensor<4x5x5xf32>) -> tensor<2x2x5x5xf32>
    %127 = stablehlo.add %126, %42 : tensor<2x2x5x5xf32>
    %128 = stablehlo.compare  EQ, %127, %cst_2 : (tensor<2x2x5x5xf32>, tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xi1>
    %129 = stablehlo.reduce(%128 init: %c_11) across dimensions = [3] : (tensor<2x2x5x5xi1>, tensor<i1>) -> tensor<2x2x5xi1>
     reducer(%arg35: tensor<i1>, %arg36: tensor<i1>)  {
      %192 = stablehlo.and %arg35, %arg36 : tensor<i1>
      %193 = stablehlo.select %192, %c_11, %c_10 : tensor<i1>, tensor<i1>
      stablehlo.return %193 : tensor<i1>
    }
    %130 = stablehlo.broadcast_in_dim %129, dims = [0, 1, 2] : (tensor<2x2x5xi1>) -> tensor<2x2x5x5xi1>
    %131 = stablehlo.reduce(%127 init: %cst_9) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5xf32>
    %132 = stablehlo.broadcast_in_dim %131, dims = [0, 1, 2] : (tensor<2x2x5xf32>) -> tensor<2x2x5x5xf32>
    %133 = stablehlo.subtract %127, %132 : tensor<2x2x5x5xf32>
    %134 = stablehlo.exponential %133 : tensor<2x2x5x5xf32>
    %135 = stablehlo.reduce(%134 init: %cst_13) applies stablehlo.add across dimensions = [3] : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5xf32>
    %136 = stablehlo.broadcast_in_dim %135, dims = [0, 1, 2] : (tensor<2x2x5xf32>) -> tensor<2x2x5x5xf32>
    %137 = stablehlo.divide %134, %136 : tensor<2x2x5x5xf32>
    %138 = stablehlo.select %130, %cst_1, %137 : tensor<2x2x5x5xi1>, tensor<2x2x5x5xf32>
    %139 = stablehlo.reshape %138 : (tensor<2x2x5x5xf32>) -> tensor<4x5x5xf32>
    %140 = stablehlo.slice %111 [0:2, 0:5, 32:48] : (tensor<2x5x48xf32>) -> tensor<2x5x16xf32>
    %141 = stablehlo.reshape %140 : (tensor<2x5x16xf32>) -> tensor<2x5x2x8xf32>
    %142 = stablehlo.transpose %141, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,8]{3,1,2,0}"} : (tensor<2x5x2x8xf32>) -> tensor<2x2x5x8xf32>
    %143 = "stablehlo.scatter"(%cst_5, %c_12, %142) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg35: tensor<f32>, %arg36: tensor<f32>):
      stablehlo.return %arg36 : tensor<f32>
    }) : (tensor<2x2x12x8xf32>, tensor<5xi64>, tensor<2x2x5x8xf32>) -> tensor<2x2x12x8xf32>
    %144 = stablehlo.slice %143 [0:2, 0:2, 0:5, 0:8] : (tensor<2x2x12x8xf32>) -> tensor<2x2x5x8xf32>
    %145 = stablehlo.reshape %144 : (tensor<2x2x5x8xf32>) -> tensor<4x5x8xf32>
    %146 = stablehlo.dot_general %139, %145, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x5x5xf32>, tensor<4x5x8xf32>) -> tensor<4x5x8xf32>
    %147 = stablehlo.reshape %146 : (tensor<4x5x8xf32>) -> tensor<2x2x5x8xf32>
    %148 = stablehlo.transpose %147, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,2,8]{3,1,2,0}"} : (tensor<2x2x5x8xf32>) -> tensor<2x5x2x8xf32>
    %149 = stablehlo.reshape %148 : (tensor<2x5x2x8xf32>) -> tensor<10x16xf32>
    %150 = stablehlo.dot_general %149, %arg27, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %151 = stablehlo.broadcast_in_dim %arg26, dims = [1] : (tensor<16xf32>) -> tensor<10x16xf32>
    %152 = stablehlo.add %150, %151 : tensor<10x16xf32>
    %153 = stablehlo.reshape %152 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %154 = stablehlo.add %153, %100 : tensor<2x5x16xf32>
    %155 = stablehlo.reshape %154 : (tensor<2x5x16xf32>) -> tensor<1x10x16xf32>
    %output_20, %batch_mean_21, %batch_var_22 = "stablehlo.batch_norm_training"(%155, %cst_7, %cst_6) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>)
    %156 = stablehlo.broadcast_in_dim %arg32, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %157 = stablehlo.reshape %output_20 : (tensor<1x10x16xf32>) -> tensor<2x5x16xf32>
    %158 = stablehlo.broadcast_in_dim %arg8, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %159 = stablehlo.multiply %157, %158 : tensor<2x5x16xf32>
    %160 = stablehlo.add %156, %159 : tensor<2x5x16xf32>
    %161 = stablehlo.reshape %160 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %162 = stablehlo.dot_general %161, %arg7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x64xf32>) -> tensor<10x64xf32>
    %163 = stablehlo.broadcast_in_dim %arg6, dims = [1] : (tensor<64xf32>) -> tensor<10x64xf32>
    %164 = stablehlo.add %162, %163 : tensor<10x64xf32>
    %165 = stablehlo.reshape %164 : (tensor<10x64xf32>) -> tensor<2x5x64xf32>
    %166 = stablehlo.multiply %165, %82 : tensor<2x5x64xf32>
    %167 = stablehlo.power %165, %cst_0 : tensor<2x5x64xf32>
    %168 = stablehlo.multiply %167, %85 : tensor<2x5x64xf32>
    %169 = stablehlo.add %165, %168 : tensor<2x5x64xf32>
    %170 = stablehlo.multiply %169, %88 : tensor<2x5x64xf32>
    %171 = stablehlo.tanh %170 : tensor<2x5x64xf32>
    %172 = stablehlo.add %171, %cst : tensor<2x5x64xf32>
    %173 = stablehlo.multiply %166, %172 : tensor<2x5x64xf32>
    %174 = stablehlo.reshape %173 : (tensor<2x5x64xf32>) -> tensor<10x64xf32>
    %175 = stablehlo.dot_general %174, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x64xf32>, tensor<64x16xf32>) -> tensor<10x16xf32>
    %176 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<16xf32>) -> tensor<10x16xf32>
    %177 = stablehlo.add %175, %176 : tensor<10x16xf32>
    %178 = stablehlo.reshape %177 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %179 = stablehlo.add %154, %178 : tensor<2x5x16xf32>
    %180 = stablehlo.reshape %179 : (tensor<2x5x16xf32>) -> tensor<1x10x16xf32>
    %output_23, %batch_mean_24, %batch_var_25 = "stablehlo.batch_norm_training"(%180, %cst_7, %cst_6) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<1x10x16xf32>, tensor<10xf32>, tensor<10xf32>)
    %181 = stablehlo.broadcast_in_dim %arg33, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %182 = stablehlo.reshape %output_23 : (tensor<1x10x16xf32>) -> tensor<2x5x16xf32>
    %183 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %184 = stablehlo.multiply %182, %183 : tensor<2x5x16xf32>
    %185 = stablehlo.add %181, %184 : tensor<2x5x16xf32>
    %186 = stablehlo.reshape %185 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %187 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,48]{0,1}"} : (tensor<48x16xf32>) -> tensor<16x48xf32>
    %188 = stablehlo.dot_general %186, %187, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x48xf32>) -> tensor<10x48xf32>
    %189 = stablehlo.reshape %188 : (tensor<10x48xf32>) -> tensor<2x5x48xf32>
    %190 = stablehlo.slice %189 [0:2, 4:5, 0:48] : (tensor<2x5x48xf32>) -> tensor<2x1x48xf32>
    %191 = stablehlo.reshape %190 : (tensor<2x1x48xf32>) -> tensor<2x48xf32>
    return %191, %27, %59, %120, %143, %arg34, %arg34 : tensor<2x48xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<i64>, tensor<i64>
  }
}
