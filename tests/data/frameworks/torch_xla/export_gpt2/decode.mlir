module @IrToHlo.628 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<48x16xf32> loc("transformer.wte.weight"), %arg1: tensor<16xf32> loc("transformer.ln_f.weight"), %arg2: tensor<16xf32> loc("transformer.h.1.mlp.c_proj.bias"), %arg3: tensor<64x16xf32> loc("transformer.h.1.mlp.c_proj.weight"), %arg4: tensor<f32> loc("lifted.float32[0.7978845834732056]"), %arg5: tensor<f32> loc("lifted.float32[0.044714998453855515]"), %arg6: tensor<64xf32> loc("transformer.h.1.mlp.c_fc.bias"), %arg7: tensor<16x64xf32> loc("transformer.h.1.mlp.c_fc.weight"), %arg8: tensor<16xf32> loc("transformer.h.1.ln_2.weight"), %arg9: tensor<16xf32> loc("transformer.h.0.mlp.c_proj.bias"), %arg10: tensor<64x16xf32> loc("transformer.h.0.mlp.c_proj.weight"), %arg11: tensor<64xf32> loc("transformer.h.0.mlp.c_fc.bias"), %arg12: tensor<16x64xf32> loc("transformer.h.0.mlp.c_fc.weight"), %arg13: tensor<16xf32> loc("transformer.h.0.ln_2.weight"), %arg14: tensor<i64> loc("cache.0.cumulative_length"), %arg15: tensor<32x16xf32> loc("transformer.wpe.weight"), %arg16: tensor<2xi64> loc("tokens"), %arg17: tensor<16xf32> loc("transformer.h.0.attn.c_proj.bias"), %arg18: tensor<16x16xf32> loc("transformer.h.0.attn.c_proj.weight"), %arg19: tensor<48xf32> loc("transformer.h.0.attn.c_attn.bias"), %arg20: tensor<16x48xf32> loc("transformer.h.0.attn.c_attn.weight"), %arg21: tensor<16xf32> loc("transformer.h.0.ln_1.weight"), %arg22: tensor<16xf32> loc("transformer.h.0.ln_1.bias"), %arg23: tensor<2x2x12x8xf32> loc("cache.0.values"), %arg24: tensor<f32> loc("lifted.float32[-inf]"), %arg25: tensor<f32> loc("lifted.float32[0.5946035385131836]"), %arg26: tensor<2x2x12x8xf32> loc("cache.0.keys"), %arg27: tensor<16xf32> loc("transformer.h.0.ln_2.bias"), %arg28: tensor<f32> loc("lifted.float32[0.5]"), %arg29: tensor<16xf32> loc("transformer.h.1.attn.c_proj.bias"), %arg30: tensor<16x16xf32> loc("transformer.h.1.attn.c_proj.weight"), %arg31: tensor<48xf32> loc("transformer.h.1.attn.c_attn.bias"), %arg32: tensor<16x48xf32> loc("transformer.h.1.attn.c_attn.weight"), %arg33: tensor<16xf32> loc("transformer.h.1.ln_1.weight"), %arg34: tensor<16xf32> loc("transformer.h.1.ln_1.bias"), %arg35: tensor<i64> loc("cache.1.cumulative_length"), %arg36: tensor<2x2x12x8xf32> loc("cache.1.values"), %arg37: tensor<2x2x12x8xf32> loc("cache.1.keys"), %arg38: tensor<16xf32> loc("transformer.h.1.ln_2.bias"), %arg39: tensor<16xf32> loc("transformer.ln_f.bias")) -> (tensor<2x48xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<i64>, tensor<i64>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<2x1x64xf32>
    %cst_0 = stablehlo.constant dense<3.000000e+00> : tensor<2x1x64xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x1x12xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<2x2x1x12xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<2x1x1x12xf32>
    %c_4 = stablehlo.constant dense<[[[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]]]]> : tensor<1x1x1x12xi64>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<2xf32>
    %cst_6 = stablehlo.constant dense<1.000000e+00> : tensor<2xf32>
    %c_7 = stablehlo.constant dense<false> : tensor<i1>
    %c_8 = stablehlo.constant dense<true> : tensor<i1>
    %cst_9 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.convert %arg16 : (tensor<2xi64>) -> tensor<2xui32>
    %1 = "stablehlo.gather"(%arg0, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<48x16xf32>, tensor<2xui32>) -> tensor<2x16xf32>
    %2 = stablehlo.reshape %1 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %3 = stablehlo.reshape %arg14 : (tensor<i64>) -> tensor<1xi64>
    %4 = stablehlo.convert %3 : (tensor<1xi64>) -> tensor<1xui32>
    %5 = "stablehlo.gather"(%arg15, %4) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<32x16xf32>, tensor<1xui32>) -> tensor<1x16xf32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [1, 2] : (tensor<1x16xf32>) -> tensor<2x1x16xf32>
    %7 = stablehlo.add %2, %6 : tensor<2x1x16xf32>
    %8 = stablehlo.reshape %7 : (tensor<2x1x16xf32>) -> tensor<1x2x16xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%8, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %9 = stablehlo.broadcast_in_dim %arg22, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %10 = stablehlo.reshape %output : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
    %11 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %12 = stablehlo.multiply %10, %11 : tensor<2x1x16xf32>
    %13 = stablehlo.add %9, %12 : tensor<2x1x16xf32>
    %14 = stablehlo.reshape %13 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %15 = stablehlo.dot_general %14, %arg20, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x48xf32>) -> tensor<2x48xf32>
    %16 = stablehlo.broadcast_in_dim %arg19, dims = [1] : (tensor<48xf32>) -> tensor<2x48xf32>
    %17 = stablehlo.add %15, %16 : tensor<2x48xf32>
    %18 = stablehlo.reshape %17 : (tensor<2x48xf32>) -> tensor<2x1x48xf32>
    %19 = stablehlo.slice %18 [0:2, 0:1, 0:16] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %20 = stablehlo.reshape %19 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %21 = stablehlo.broadcast_in_dim %arg25, dims = [] : (tensor<f32>) -> tensor<2x2x1x8xf32>
    %22 = stablehlo.multiply %20, %21 : tensor<2x2x1x8xf32>
    %23 = stablehlo.reshape %22 : (tensor<2x2x1x8xf32>) -> tensor<4x1x8xf32>
    %24 = stablehlo.slice %18 [0:2, 0:1, 16:32] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %25 = stablehlo.reshape %24 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %26 = "stablehlo.scatter"(%arg26, %3, %25) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg40: tensor<f32>, %arg41: tensor<f32>):
      stablehlo.return %arg41 : tensor<f32>
    }) : (tensor<2x2x12x8xf32>, tensor<1xi64>, tensor<2x2x1x8xf32>) -> tensor<2x2x12x8xf32>
    %27 = stablehlo.transpose %26, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,12]{2,3,1,0}"} : (tensor<2x2x12x8xf32>) -> tensor<2x2x8x12xf32>
    %28 = stablehlo.broadcast_in_dim %arg25, dims = [] : (tensor<f32>) -> tensor<2x2x8x12xf32>
    %29 = stablehlo.multiply %27, %28 : tensor<2x2x8x12xf32>
    %30 = stablehlo.reshape %29 : (tensor<2x2x8x12xf32>) -> tensor<4x8x12xf32>
    %31 = stablehlo.dot_general %23, %30, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x1x8xf32>, tensor<4x8x12xf32>) -> tensor<4x1x12xf32>
    %32 = stablehlo.reshape %31 : (tensor<4x1x12xf32>) -> tensor<2x2x1x12xf32>
    %33 = stablehlo.reshape %arg14 : (tensor<i64>) -> tensor<1x1x1xi64>
    %34 = stablehlo.broadcast_in_dim %33, dims = [0, 1, 2] : (tensor<1x1x1xi64>) -> tensor<1x1x1x12xi64>
    %35 = stablehlo.compare  LE, %c_4, %34 : (tensor<1x1x1x12xi64>, tensor<1x1x1x12xi64>) -> tensor<1x1x1x12xi1>
    %36 = stablehlo.reshape %35 : (tensor<1x1x1x12xi1>) -> tensor<1x1x12xi1>
    %37 = stablehlo.broadcast_in_dim %36, dims = [1, 2, 3] : (tensor<1x1x12xi1>) -> tensor<2x1x1x12xi1>
    %38 = stablehlo.reshape %arg24 : (tensor<f32>) -> tensor<1x1xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [1, 2] : (tensor<1x1xf32>) -> tensor<2x1x1x12xf32>
    %40 = stablehlo.select %37, %cst_3, %39 : tensor<2x1x1x12xi1>, tensor<2x1x1x12xf32>
    %41 = stablehlo.reshape %40 : (tensor<2x1x1x12xf32>) -> tensor<2x1x12xf32>
    %42 = stablehlo.broadcast_in_dim %41, dims = [0, 2, 3] : (tensor<2x1x12xf32>) -> tensor<2x2x1x12xf32>
    %43 = stablehlo.add %32, %42 : tensor<2x2x1x12xf32>
    %44 = stablehlo.compare  EQ, %43, %cst_2 : (tensor<2x2x1x12xf32>, tensor<2x2x1x12xf32>) -> tensor<2x2x1x12xi1>
    %45 = stablehlo.reduce(%44 init: %c_8) across dimensions = [3] : (tensor<2x2x1x12xi1>, tensor<i1>) -> tensor<2x2x1xi1>
     reducer(%arg40: tensor<i1>, %arg41: tensor<i1>)  {
      %181 = stablehlo.and %arg40, %arg41 : tensor<i1>
      %182 = stablehlo.select %181, %c_8, %c_7 : tensor<i1>, tensor<i1>
      stablehlo.return %182 : tensor<i1>
    }
    %46 = stablehlo.broadcast_in_dim %45, dims = [0, 1, 2] : (tensor<2x2x1xi1>) -> tensor<2x2x1x12xi1>
    %47 = stablehlo.reduce(%43 init: %cst_9) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x1x12xf32>, tensor<f32>) -> tensor<2x2x1xf32>
    %48 = stablehlo.broadcast_in_dim %47, dims = [0, 1, 2] : (tensor<2x2x1xf32>) -> tensor<2x2x1x12xf32>
    %49 = stablehlo.subtract %43, %48 : tensor<2x2x1x12xf32>
    %50 = stablehlo.exponential %49 : tensor<2x2x1x12xf32>
    %51 = stablehlo.reduce(%50 init: %cst_10) applies stablehlo.add across dimensions = [3] : (tensor<2x2x1x12xf32>, tensor<f32>) -> tensor<2x2x1xf32>
    %52 = stablehlo.broadcast_in_dim %51, dims = [0, 1, 2] : (tensor<2x2x1xf32>) -> tensor<2x2x1x12xf32>
    %53 = stablehlo.divide %50, %52 : tensor<2x2x1x12xf32>
    %54 = stablehlo.select %46, %cst_1, %53 : tensor<2x2x1x12xi1>, tensor<2x2x1x12xf32>
    %55 = stablehlo.reshape %54 : (tensor<2x2x1x12xf32>) -> tensor<4x1x12xf32>
    %56 = stablehlo.slice %18 [0:2, 0:1, 32:48] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %57 = stablehlo.reshape %56 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %58 = "stablehlo.scatter"(%arg23, %3, %57) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg40: tensor<f32>, %arg41: tensor<f32>):
      stablehlo.return %arg41 : tensor<f32>
    }) : (tensor<2x2x12x8xf32>, tensor<1xi64>, tensor<2x2x1x8xf32>) -> tensor<2x2x12x8xf32>
    %59 = stablehlo.reshape %58 : (tensor<2x2x12x8xf32>) -> tensor<4x12x8xf32>
    %60 = stablehlo.dot_general %55, %59, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x1x12xf32>, tensor<4x12x8xf32>) -> tensor<4x1x8xf32>
    %61 = stablehlo.reshape %60 : (tensor<4x1x8xf32>) -> tensor<2x16xf32>
    %62 = stablehlo.dot_general %61, %arg18, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %63 = stablehlo.broadcast_in_dim %arg17, dims = [1] : (tensor<16xf32>) -> tensor<2x16xf32>
    %64 = stablehlo.add %62, %63 : tensor<2x16xf32>
    %65 = stablehlo.reshape %64 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %66 = stablehlo.add %65, %7 : tensor<2x1x16xf32>
    %67 = stablehlo.reshape %66 : (tensor<2x1x16xf32>) -> tensor<1x2x16xf32>
    %output_11, %batch_mean_12, %batch_var_13 = "stablehlo.batch_norm_training"(%67, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %68 = stablehlo.broadcast_in_dim %arg27, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %69 = stablehlo.reshape %output_11 : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
    %70 = stablehlo.broadcast_in_dim %arg13, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %71 = stablehlo.multiply %69, %70 : tensor<2x1x16xf32>
    %72 = stablehlo.add %68, %71 : tensor<2x1x16xf32>
    %73 = stablehlo.reshape %72 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %74 = stablehlo.dot_general %73, %arg12, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x64xf32>) -> tensor<2x64xf32>
    %75 = stablehlo.broadcast_in_dim %arg11, dims = [1] : (tensor<64xf32>) -> tensor<2x64xf32>
    %76 = stablehlo.add %74, %75 : tensor<2x64xf32>
    %77 = stablehlo.reshape %76 : (tensor<2x64xf32>) -> tensor<2x1x64xf32>
    %78 = stablehlo.broadcast_in_dim %arg28, dims = [] : (tensor<f32>) -> tensor<2x1x64xf32>
    %79 = stablehlo.multiply %77, %78 : tensor<2x1x64xf32>
    %80 = stablehlo.power %77, %cst_0 : tensor<2x1x64xf32>
    %81 = stablehlo.broadcast_in_dim %arg5, dims = [] : (tensor<f32>) -> tensor<2x1x64xf32>
    %82 = stablehlo.multiply %80, %81 : tensor<2x1x64xf32>
    %83 = stablehlo.add %77, %82 : tensor<2x1x64xf32>
    %84 = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<f32>) -> tensor<2x1x64xf32>
    %85 = stablehlo.multiply %83, %84 : tensor<2x1x64xf32>
    %86 = stablehlo.tanh %85 : tensor<2x1x64xf32>
    %87 = stablehlo.add %86, %cst : tensor<2x1x64xf32>
    %88 = stablehlo.multiply %79, %87 : tensor<2x1x64xf32>
    %89 = stablehlo.reshape %88 : (tensor<2x1x64xf32>) -> tensor<2x64xf32>
    %90 = stablehlo.dot_general %89, %arg10, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x16xf32>) -> tensor<2x16xf32>
    %91 = stablehlo.broadcast_in_dim %arg9, dims = [1] : (tensor<16xf32>) -> tensor<2x16xf32>
    %92 = stablehlo.add %90, %91 : tensor<2x16xf32>
    %93 = stablehlo.reshape %92 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %94 = stablehlo.add %66, %93 : tensor<2x1x16xf32>
    %95 = stablehlo.optimization_barrier %94 : tensor<2x1x16xf32>
    %96 = stablehlo.custom_call @LayoutConstraint(%95) {backend_config = "", mhlo.frontend_attributes = {hlopipe.stage_boundary = "true"}} : (tensor<2x1x16xf32>) -> tensor<2x1x16xf32>
    %97 = stablehlo.reshape %96 : (tensor<2x1x16xf32>) -> tensor<1x2x16xf32>
    %output_14, %batch_mean_15, %batch_var_16 = "stablehlo.batch_norm_training"(%97, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %98 = stablehlo.broadcast_in_dim %arg34, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %99 = stablehlo.reshape %output_14 : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
    %100 = stablehlo.broadcast_in_dim %arg33, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %101 = stablehlo.multiply %99, %100 : tensor<2x1x16xf32>
    %102 = stablehlo.add %98, %101 : tensor<2x1x16xf32>
    %103 = stablehlo.reshape %102 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %104 = stablehlo.dot_general %103, %arg32, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x48xf32>) -> tensor<2x48xf32>
    %105 = stablehlo.broadcast_in_dim %arg31, dims = [1] : (tensor<48xf32>) -> tensor<2x48xf32>
    %106 = stablehlo.add %104, %105 : tensor<2x48xf32>
    %107 = stablehlo.reshape %106 : (tensor<2x48xf32>) -> tensor<2x1x48xf32>
    %108 = stablehlo.slice %107 [0:2, 0:1, 0:16] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %109 = stablehlo.reshape %108 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %110 = stablehlo.multiply %109, %21 : tensor<2x2x1x8xf32>
    %111 = stablehlo.reshape %110 : (tensor<2x2x1x8xf32>) -> tensor<4x1x8xf32>
    %112 = stablehlo.reshape %arg35 : (tensor<i64>) -> tensor<1xi64>
    %113 = stablehlo.slice %107 [0:2, 0:1, 16:32] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %114 = stablehlo.reshape %113 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %115 = "stablehlo.scatter"(%arg37, %112, %114) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg40: tensor<f32>, %arg41: tensor<f32>):
      stablehlo.return %arg41 : tensor<f32>
    }) : (tensor<2x2x12x8xf32>, tensor<1xi64>, tensor<2x2x1x8xf32>) -> tensor<2x2x12x8xf32>
    %116 = stablehlo.transpose %115, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,12]{2,3,1,0}"} : (tensor<2x2x12x8xf32>) -> tensor<2x2x8x12xf32>
    %117 = stablehlo.multiply %116, %28 : tensor<2x2x8x12xf32>
    %118 = stablehlo.reshape %117 : (tensor<2x2x8x12xf32>) -> tensor<4x8x12xf32>
    %119 = stablehlo.dot_general %111, %118, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x1x8xf32>, tensor<4x8x12xf32>) -> tensor<4x1x12xf32>
    %120 = stablehlo.reshape %119 : (tensor<4x1x12xf32>) -> tensor<2x2x1x12xf32>
    %121 = stablehlo.add %120, %42 : tensor<2x2x1x12xf32>
    %122 = stablehlo.compare  EQ, %121, %cst_2 : (tensor<2x2x1x12xf32>, tensor<2x2x1x12xf32>) -> tensor<2x2x1x12xi1>
    %123 = stablehlo.reduce(%122 init: %c_8) across dimensions = [3] : (tensor<2x2x1x12xi1>, tensor<i1>) -> tensor<2x2x1xi1>
     reducer(%arg40: tensor<i1>, %arg41: tensor<i1>)  {
      %181 = stablehlo.and %arg40, %arg41 : tensor<i1>
      %182 = stablehlo.select %181, %c_8, %c_7 : tensor<i1>, tensor<i1>
      stablehlo.return %182 : tensor<i1>
    }
    %124 = stablehlo.broadcast_in_dim %123, dims = [0, 1, 2] : (tensor<2x2x1xi1>) -> tensor<2x2x1x12xi1>
    %125 = stablehlo.reduce(%121 init: %cst_9) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x1x12xf32>, tensor<f32>) -> tensor<2x2x1xf32>
    %126 = stablehlo.broadcast_in_dim %125, dims = [0, 1, 2] : (tensor<2x2x1xf32>) -> tensor<2x2x1x12xf32>
    %127 = stablehlo.subtract %121, %126 : tensor<2x2x1x12xf32>
    %128 = stablehlo.exponential %127 : tensor<2x2x1x12xf32>
    %129 = stablehlo.reduce(%128 init: %cst_10) applies stablehlo.add across dimensions = [3] : (tensor<2x2x1x12xf32>, tensor<f32>) -> tensor<2x2x1xf32>
    %130 = stablehlo.broadcast_in_dim %129, dims = [0, 1, 2] : (tensor<2x2x1xf32>) -> tensor<2x2x1x12xf32>
    %131 = stablehlo.divide %128, %130 : tensor<2x2x1x12xf32>
    %132 = stablehlo.select %124, %cst_1, %131 : tensor<2x2x1x12xi1>, tensor<2x2x1x12xf32>
    %133 = stablehlo.reshape %132 : (tensor<2x2x1x12xf32>) -> tensor<4x1x12xf32>
    %134 = stablehlo.slice %107 [0:2, 0:1, 32:48] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %135 = stablehlo.reshape %134 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %136 = "stablehlo.scatter"(%arg36, %112, %135) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg40: tensor<f32>, %arg41: tensor<f32>):
      stablehlo.return %arg41 : tensor<f32>
    }) : (tensor<2x2x12x8xf32>, tensor<1xi64>, tensor<2x2x1x8xf32>) -> tensor<2x2x12x8xf32>
    %137 = stablehlo.reshape %136 : (tensor<2x2x12x8xf32>) -> tensor<4x12x8xf32>
    %138 = stablehlo.dot_general %133, %137, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x1x12xf32>, tensor<4x12x8xf32>) -> tensor<4x1x8xf32>
    %139 = stablehlo.reshape %138 : (tensor<4x1x8xf32>) -> tensor<2x16xf32>
    %140 = stablehlo.dot_general %139, %arg30, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %141 = stablehlo.broadcast_in_dim %arg29, dims = [1] : (tensor<16xf32>) -> tensor<2x16xf32>
    %142 = stablehlo.add %140, %141 : tensor<2x16xf32>
    %143 = stablehlo.reshape %142 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %144 = stablehlo.add %143, %96 : tensor<2x1x16xf32>
    %145 = stablehlo.reshape %144 : (tensor<2x1x16xf32>) -> tensor<1x2x16xf32>
    %output_17, %batch_mean_18, %batch_var_19 = "stablehlo.batch_norm_training"(%145, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %146 = stablehlo.broadcast_in_dim %arg38, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %147 = stablehlo.reshape %output_17 : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
    %148 = stablehlo.broadcast_in_dim %arg8, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %149 = stablehlo.multiply %147, %148 : tensor<2x1x16xf32>
    %150 = stablehlo.add %146, %149 : tensor<2x1x16xf32>
    %151 = stablehlo.reshape %150 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %152 = stablehlo.dot_general %151, %arg7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x64xf32>) -> tensor<2x64xf32>
    %153 = stablehlo.broadcast_in_dim %arg6, dims = [1] : (tensor<64xf32>) -> tensor<2x64xf32>
    %154 = stablehlo.add %152, %153 : tensor<2x64xf32>
    %155 = stablehlo.reshape %154 : (tensor<2x64xf32>) -> tensor<2x1x64xf32>
    %156 = stablehlo.multiply %155, %78 : tensor<2x1x64xf32>
    %157 = stablehlo.power %155, %cst_0 : tensor<2x1x64xf32>
    %158 = stablehlo.multiply %157, %81 : tensor<2x1x64xf32>
    %159 = stablehlo.add %155, %158 : tensor<2x1x64xf32>
    %160 = stablehlo.multiply %159, %84 : tensor<2x1x64xf32>
    %161 = stablehlo.tanh %160 : tensor<2x1x64xf32>
    %162 = stablehlo.add %161, %cst : tensor<2x1x64xf32>
    %163 = stablehlo.multiply %156, %162 : tensor<2x1x64xf32>
    %164 = stablehlo.reshape %163 : (tensor<2x1x64xf32>) -> tensor<2x64xf32>
    %165 = stablehlo.dot_general %164, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x16xf32>) -> tensor<2x16xf32>
    %166 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<16xf32>) -> tensor<2x16xf32>
    %167 = stablehlo.add %165, %166 : tensor<2x16xf32>
    %168 = stablehlo.reshape %167 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %169 = stablehlo.add %144, %168 : tensor<2x1x16xf32>
    %170 = stablehlo.reshape %169 : (tensor<2x1x16xf32>) -> tensor<1x2x16xf32>
    %output_20, %batch_mean_21, %batch_var_22 = "stablehlo.batch_norm_training"(%170, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %171 = stablehlo.broadcast_in_dim %arg39, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %172 = stablehlo.reshape %output_20 : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
    %173 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %174 = stablehlo.multiply %172, %173 : tensor<2x1x16xf32>
    %175 = stablehlo.add %171, %174 : tensor<2x1x16xf32>
    %176 = stablehlo.reshape %175 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %177 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,48]{0,1}"} : (tensor<48x16xf32>) -> tensor<16x48xf32>
    %178 = stablehlo.dot_general %176, %177, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x48xf32>) -> tensor<2x48xf32>
    %179 = stablehlo.add %arg14, %c : tensor<i64>
    %180 = stablehlo.add %arg35, %c : tensor<i64>
    return %178, %26, %58, %115, %136, %179, %180 : tensor<2x48xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<i64>, tensor<i64>
  }
}
