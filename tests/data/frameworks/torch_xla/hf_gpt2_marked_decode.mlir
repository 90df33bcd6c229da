module @IrToHlo.659 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<32x16xf32>, %arg1: tensor<16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<64x16xf32>, %arg4: tensor<f32>, %arg5: tensor<f32>, %arg6: tensor<64xf32>, %arg7: tensor<16x64xf32>, %arg8: tensor<16xf32>, %arg9: tensor<16xf32>, %arg10: tensor<64x16xf32>, %arg11: tensor<64xf32>, %arg12: tensor<16x64xf32>, %arg13: tensor<16xf32>, %arg14: tensor<i64>, %arg15: tensor<16x16xf32>, %arg16: tensor<2xi64>, %arg17: tensor<32x16xf32>, %arg18: tensor<16xf32>, %arg19: tensor<16x16xf32>, %arg20: tensor<48xf32>, %arg21: tensor<16x48xf32>, %arg22: tensor<16xf32>, %arg23: tensor<16xf32>, %arg24: tensor<2x2x8x8xf32>, %arg25: tensor<f32>, %arg26: tensor<f32>, %arg27: tensor<2x2x8x8xf32>, %arg28: tensor<16xf32>, %arg29: tensor<f32>, %arg30: tensor<16xf32>, %arg31: tensor<16x16xf32>, %arg32: tensor<48xf32>, %arg33: tensor<16x48xf32>, %arg34: tensor<16xf32>, %arg35: tensor<16xf32>, %arg36: tensor<i64>, %arg37: tensor<2x2x8x8xf32>, %arg38: tensor<2x2x8x8xf32>, %arg39: tensor<16xf32>, %arg40: tensor<16xf32>) -> (tensor<2x32xf32>, tensor<2xi64>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<i64>, tensor<i64>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<2x1x64xf32>
    %cst_0 = stablehlo.constant dense<3.000000e+00> : tensor<2x1x64xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x1x8xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<2x2x1x8xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<2x1x1x8xf32>
    %c_4 = stablehlo.constant dense<[[[[0, 1, 2, 3, 4, 5, 6, 7]]]]> : tensor<1x1x1x8xi64>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<2xf32>
    %cst_6 = stablehlo.constant dense<1.000000e+00> : tensor<2xf32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %c_8 = stablehlo.constant dense<false> : tensor<i1>
    %c_9 = stablehlo.constant dense<true> : tensor<i1>
    %cst_10 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.convert %arg16 : (tensor<2xi64>) -> tensor<2xui32>
    %1 = "stablehlo.gather"(%arg17, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<32x16xf32>, tensor<2xui32>) -> tensor<2x16xf32>
    %2 = stablehlo.reshape %1 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %3 = stablehlo.reshape %arg14 : (tensor<i64>) -> tensor<1xi64>
    %4 = stablehlo.convert %3 : (tensor<1xi64>) -> tensor<1xui32>
    %5 = "stablehlo.gather"(%arg15, %4) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<16x16xf32>, tensor<1xui32>) -> tensor<1x16xf32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [1, 2] : (tensor<1x16xf32>) -> tensor<2x1x16xf32>
    %7 = stablehlo.add %2, %6 : tensor<2x1x16xf32>
    %8 = stablehlo.reshape %7 : (tensor<2x1x16xf32>) -> tensor<1x2x16xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%8, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %9 = stablehlo.broadcast_in_dim %arg23, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %10 = stablehlo.reshape %output : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
    %11 = stablehlo.broadcast_in_dim %arg22, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %12 = stablehlo.multiply %10, %11 : tensor<2x1x16xf32>
    %13 = stablehlo.add %9, %12 : tensor<2x1x16xf32>
    %14 = stablehlo.reshape %13 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %15 = stablehlo.dot_general %14, %arg21, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x48xf32>) -> tensor<2x48xf32>
    %16 = stablehlo.broadcast_in_dim %arg20, dims = [1] : (tensor<48xf32>) -> tensor<2x48xf32>
    %17 = stablehlo.add %15, %16 : tensor<2x48xf32>
    %18 = stablehlo.reshape %17 : (tensor<2x48xf32>) -> tensor<2x1x48xf32>
    %19 = stablehlo.slice %18 [0:2, 0:1, 0:16] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %20 = stablehlo.reshape %19 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %21 = stablehlo.broadcast_in_dim %arg26, dims = [] : (tensor<f32>) -> tensor<2x2x1x8xf32>
    %22 = stablehlo.multiply %20, %21 : tensor<2x2x1x8xf32>
    %23 = stablehlo.reshape %22 : (tensor<2x2x1x8xf32>) -> tensor<4x1x8xf32>
    %24 = stablehlo.slice %18 [0:2, 0:1, 16:32] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %25 = stablehlo.reshape %24 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %26 = "stablehlo.scatter"(%arg27, %3, %25) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg41: tensor<f32>, %arg42: tensor<f32>):
      stablehlo.return %arg42 : tensor<f32>
    }) : (tensor<2x2x8x8xf32>, tensor<1xi64>, tensor<2x2x1x8xf32>) -> tensor<2x2x8x8xf32>
    %27 = stablehlo.transpose %26, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,8]{2,3,1,0}"} : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
    %28 = stablehlo.broadcast_in_dim %arg26, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %29 = stablehlo.multiply %27, %28 : tensor<2x2x8x8xf32>
    %30 = stablehlo.reshape %29 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %31 = stablehlo.dot_general %23, %30, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x1x8xf32>, tensor<4x8x8xf32>) -> tensor<4x1x8xf32>
    %32 = stablehlo.reshape %31 : (tensor<4x1x8xf32>) -> tensor<2x2x1x8xf32>
    %33 = stablehlo.reshape %arg14 : (tensor<i64>) -> tensor<1x1x1xi64>
    %34 = stablehlo.broadcast_in_dim %33, dims = [0, 1, 2] : (tensor<1x1x1xi64>) -> tensor<1x1x1x8xi64>
    %35 = stablehlo.compare  LE, %c_4, %34 : (tensor<1x1x1x8xi64>, tensor<1x1x1x8xi64>) -> tensor<1x1x1x8xi1>
    %36 = stablehlo.reshape %35 : (tensor<1x1x1x8xi1>) -> tensor<1x1x8xi1>
    %37 = stablehlo.broadcast_in_dim %36, dims = [1, 2, 3] : (tensor<1x1x8xi1>) -> tensor<2x1x1x8xi1>
    %38 = stablehlo.reshape %arg25 : (tensor<f32>) -> tensor<1x1xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [1, 2] : (tensor<1x1xf32>) -> tensor<2x1x1x8xf32>
    %40 = stablehlo.select %37, %cst_3, %39 : tensor<2x1x1x8xi1>, tensor<2x1x1x8xf32>
    %41 = stablehlo.reshape %40 : (tensor<2x1x1x8xf32>) -> tensor<2x1x8xf32>
    %42 = stablehlo.broadcast_in_dim %41, dims = [0, 2, 3] : (tensor<2x1x8xf32>) -> tensor<2x2x1x8xf32>
    %43 = stablehlo.add %32, %42 : tensor<2x2x1x8xf32>
    %44 = stablehlo.compare  EQ, %43, %cst_2 : (tensor<2x2x1x8xf32>, tensor<2x2x1x8xf32>) -> tensor<2x2x1x8xi1>
    %45 = stablehlo.reduce(%44 init: %c_9) across dimensions = [3] : (tensor<2x2x1x8xi1>, tensor<i1>) -> tensor<2x2x1xi1>
     reducer(%arg41: tensor<i1>, %arg42: tensor<i1>)  {
      %185 = stablehlo.and %arg41, %arg42 : tensor<i1>
      %186 = stablehlo.select %185, %c_9, %c_8 : tensor<i1>, tensor<i1>
      stablehlo.return %186 : tensor<i1>
    }
    %46 = stablehlo.broadcast_in_dim %45, dims = [0, 1, 2] : (tensor<2x2x1xi1>) -> tensor<2x2x1x8xi1>
    %47 = stablehlo.reduce(%43 init: %cst_10) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x1x8xf32>, tensor<f32>) -> tensor<2x2x1xf32>
    %48 = stablehlo.broadcast_in_dim %47, dims = [0, 1, 2] : (tensor<2x2x1xf32>) -> tensor<2x2x1x8xf32>
    %49 = stablehlo.subtract %43, %48 : tensor<2x2x1x8xf32>
    %50 = stablehlo.exponential %49 : tensor<2x2x1x8xf32>
    %51 = stablehlo.reduce(%50 init: %cst_11) applies stablehlo.add across dimensions = [3] : (tensor<2x2x1x8xf32>, tensor<f32>) -> tensor<2x2x1xf32>
    %52 = stablehlo.broadcast_in_dim %51, dims = [0, 1, 2] : (tensor<2x2x1xf32>) -> tensor<2x2x1x8xf32>
    %53 = stablehlo.divide %50, %52 : tensor<2x2x1x8xf32>
    %54 = stablehlo.select %46, %cst_1, %53 : tensor<2x2x1x8xi1>, tensor<2x2x1x8xf32>
    %55 = stablehlo.reshape %54 : (tensor<2x2x1x8xf32>) -> tensor<4x1x8xf32>
    %56 = stablehlo.slice %18 [0:2, 0:1, 32:48] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %57 = stablehlo.reshape %56 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %58 = "stablehlo.scatter"(%arg24, %3, %57) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg41: tensor<f32>, %arg42: tensor<f32>):
      stablehlo.return %arg42 : tensor<f32>
    }) : (tensor<2x2x8x8xf32>, tensor<1xi64>, tensor<2x2x1x8xf32>) -> tensor<2x2x8x8xf32>
    %59 = stablehlo.reshape %58 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %60 = stablehlo.dot_general %55, %59, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x1x8xf32>, tensor<4x8x8xf32>) -> tensor<4x1x8xf32>
    %61 = stablehlo.reshape %60 : (tensor<4x1x8xf32>) -> tensor<2x16xf32>
    %62 = stablehlo.dot_general %61, %arg19, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %63 = stablehlo.broadcast_in_dim %arg18, dims = [1] : (tensor<16xf32>) -> tensor<2x16xf32>
    %64 = stablehlo.add %62, %63 : tensor<2x16xf32>
    %65 = stablehlo.reshape %64 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %66 = stablehlo.add %65, %7 : tensor<2x1x16xf32>
    %67 = stablehlo.reshape %66 : (tensor<2x1x16xf32>) -> tensor<1x2x16xf32>
    %output_12, %batch_mean_13, %batch_var_14 = "stablehlo.batch_norm_training"(%67, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %68 = stablehlo.broadcast_in_dim %arg28, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %69 = stablehlo.reshape %output_12 : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
    %70 = stablehlo.broadcast_in_dim %arg13, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %71 = stablehlo.multiply %69, %70 : tensor<2x1x16xf32>
    %72 = stablehlo.add %68, %71 : tensor<2x1x16xf32>
    %73 = stablehlo.reshape %72 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %74 = stablehlo.dot_general %73, %arg12, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x64xf32>) -> tensor<2x64xf32>
    %75 = stablehlo.broadcast_in_dim %arg11, dims = [1] : (tensor<64xf32>) -> tensor<2x64xf32>
    %76 = stablehlo.add %74, %75 : tensor<2x64xf32>
    %77 = stablehlo.reshape %76 : (tensor<2x64xf32>) -> tensor<2x1x64xf32>
    %78 = stablehlo.broadcast_in_dim %arg29, dims = [] : (tensor<f32>) -> tensor<2x1x64xf32>
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
    %output_15, %batch_mean_16, %batch_var_17 = "stablehlo.batch_norm_training"(%97, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %98 = stablehlo.broadcast_in_dim %arg35, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %99 = stablehlo.reshape %output_15 : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
    %100 = stablehlo.broadcast_in_dim %arg34, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %101 = stablehlo.multiply %99, %100 : tensor<2x1x16xf32>
    %102 = stablehlo.add %98, %101 : tensor<2x1x16xf32>
    %103 = stablehlo.reshape %102 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %104 = stablehlo.dot_general %103, %arg33, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x48xf32>) -> tensor<2x48xf32>
    %105 = stablehlo.broadcast_in_dim %arg32, dims = [1] : (tensor<48xf32>) -> tensor<2x48xf32>
    %106 = stablehlo.add %104, %105 : tensor<2x48xf32>
    %107 = stablehlo.reshape %106 : (tensor<2x48xf32>) -> tensor<2x1x48xf32>
    %108 = stablehlo.slice %107 [0:2, 0:1, 0:16] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %109 = stablehlo.reshape %108 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %110 = stablehlo.multiply %109, %21 : tensor<2x2x1x8xf32>
    %111 = stablehlo.reshape %110 : (tensor<2x2x1x8xf32>) -> tensor<4x1x8xf32>
    %112 = stablehlo.reshape %arg36 : (tensor<i64>) -> tensor<1xi64>
    %113 = stablehlo.slice %107 [0:2, 0:1, 16:32] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %114 = stablehlo.reshape %113 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %115 = "stablehlo.scatter"(%arg38, %112, %114) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg41: tensor<f32>, %arg42: tensor<f32>):
      stablehlo.return %arg42 : tensor<f32>
    }) : (tensor<2x2x8x8xf32>, tensor<1xi64>, tensor<2x2x1x8xf32>) -> tensor<2x2x8x8xf32>
    %116 = stablehlo.transpose %115, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,8,8]{2,3,1,0}"} : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
    %117 = stablehlo.multiply %116, %28 : tensor<2x2x8x8xf32>
    %118 = stablehlo.reshape %117 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %119 = stablehlo.dot_general %111, %118, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x1x8xf32>, tensor<4x8x8xf32>) -> tensor<4x1x8xf32>
    %120 = stablehlo.reshape %119 : (tensor<4x1x8xf32>) -> tensor<2x2x1x8xf32>
    %121 = stablehlo.add %120, %42 : tensor<2x2x1x8xf32>
    %122 = stablehlo.compare  EQ, %121, %cst_2 : (tensor<2x2x1x8xf32>, tensor<2x2x1x8xf32>) -> tensor<2x2x1x8xi1>
    %123 = stablehlo.reduce(%122 init: %c_9) across dimensions = [3] : (tensor<2x2x1x8xi1>, tensor<i1>) -> tensor<2x2x1xi1>
     reducer(%arg41: tensor<i1>, %arg42: tensor<i1>)  {
      %185 = stablehlo.and %arg41, %arg42 : tensor<i1>
      %186 = stablehlo.select %185, %c_9, %c_8 : tensor<i1>, tensor<i1>
      stablehlo.return %186 : tensor<i1>
    }
    %124 = stablehlo.broadcast_in_dim %123, dims = [0, 1, 2] : (tensor<2x2x1xi1>) -> tensor<2x2x1x8xi1>
    %125 = stablehlo.reduce(%121 init: %cst_10) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x1x8xf32>, tensor<f32>) -> tensor<2x2x1xf32>
    %126 = stablehlo.broadcast_in_dim %125, dims = [0, 1, 2] : (tensor<2x2x1xf32>) -> tensor<2x2x1x8xf32>
    %127 = stablehlo.subtract %121, %126 : tensor<2x2x1x8xf32>
    %128 = stablehlo.exponential %127 : tensor<2x2x1x8xf32>
    %129 = stablehlo.reduce(%128 init: %cst_11) applies stablehlo.add across dimensions = [3] : (tensor<2x2x1x8xf32>, tensor<f32>) -> tensor<2x2x1xf32>
    %130 = stablehlo.broadcast_in_dim %129, dims = [0, 1, 2] : (tensor<2x2x1xf32>) -> tensor<2x2x1x8xf32>
    %131 = stablehlo.divide %128, %130 : tensor<2x2x1x8xf32>
    %132 = stablehlo.select %124, %cst_1, %131 : tensor<2x2x1x8xi1>, tensor<2x2x1x8xf32>
    %133 = stablehlo.reshape %132 : (tensor<2x2x1x8xf32>) -> tensor<4x1x8xf32>
    %134 = stablehlo.slice %107 [0:2, 0:1, 32:48] : (tensor<2x1x48xf32>) -> tensor<2x1x16xf32>
    %135 = stablehlo.reshape %134 : (tensor<2x1x16xf32>) -> tensor<2x2x1x8xf32>
    %136 = "stablehlo.scatter"(%arg37, %112, %135) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg41: tensor<f32>, %arg42: tensor<f32>):
      stablehlo.return %arg42 : tensor<f32>
    }) : (tensor<2x2x8x8xf32>, tensor<1xi64>, tensor<2x2x1x8xf32>) -> tensor<2x2x8x8xf32>
    %137 = stablehlo.reshape %136 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
    %138 = stablehlo.dot_general %133, %137, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x1x8xf32>, tensor<4x8x8xf32>) -> tensor<4x1x8xf32>
    %139 = stablehlo.reshape %138 : (tensor<4x1x8xf32>) -> tensor<2x16xf32>
    %140 = stablehlo.dot_general %139, %arg31, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %141 = stablehlo.broadcast_in_dim %arg30, dims = [1] : (tensor<16xf32>) -> tensor<2x16xf32>
    %142 = stablehlo.add %140, %141 : tensor<2x16xf32>
    %143 = stablehlo.reshape %142 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %144 = stablehlo.add %143, %96 : tensor<2x1x16xf32>
    %145 = stablehlo.reshape %144 : (tensor<2x1x16xf32>) -> tensor<1x2x16xf32>
    %output_18, %batch_mean_19, %batch_var_20 = "stablehlo.batch_norm_training"(%145, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %146 = stablehlo.broadcast_in_dim %arg39, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %147 = stablehlo.reshape %output_18 : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
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
    %output_21, %batch_mean_22, %batch_var_23 = "stablehlo.batch_norm_training"(%170, %cst_6, %cst_5) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x16xf32>, tensor<2xf32>, tensor<2xf32>)
    %171 = stablehlo.broadcast_in_dim %arg40, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %172 = stablehlo.reshape %output_21 : (tensor<1x2x16xf32>) -> tensor<2x1x16xf32>
    %173 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %174 = stablehlo.multiply %172, %173 : tensor<2x1x16xf32>
    %175 = stablehlo.add %171, %174 : tensor<2x1x16xf32>
    %176 = stablehlo.reshape %175 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %177 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %178 = stablehlo.dot_general %176, %177, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %179 = stablehlo.iota dim = 0 : tensor<32xi32>
    %180 = stablehlo.broadcast_in_dim %179, dims = [1] : (tensor<32xi32>) -> tensor<2x32xi32>
    %181:2 = stablehlo.reduce(%178 init: %cst_10), (%180 init: %c_7) across dimensions = [1] : (tensor<2x32xf32>, tensor<2x32xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
     reducer(%arg41: tensor<f32>, %arg43: tensor<f32>) (%arg42: tensor<i32>, %arg44: tensor<i32>)  {
      %185 = stablehlo.compare  GE, %arg41, %arg43 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %186 = stablehlo.select %185, %arg41, %arg43 : tensor<i1>, tensor<f32>
      %187 = stablehlo.compare  EQ, %arg41, %arg43 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %188 = stablehlo.minimum %arg42, %arg44 : tensor<i32>
      %189 = stablehlo.select %185, %arg42, %arg44 : tensor<i1>, tensor<i32>
      %190 = stablehlo.select %187, %188, %189 : tensor<i1>, tensor<i32>
      stablehlo.return %186, %190 : tensor<f32>, tensor<i32>
    }
    %182 = stablehlo.convert %181#1 : (tensor<2xi32>) -> tensor<2xi64>
    %183 = stablehlo.add %arg14, %c : tensor<i64>
    %184 = stablehlo.add %arg36, %c : tensor<i64>
    return %178, %182, %26, %58, %115, %136, %183, %184 : tensor<2x32xf32>, tensor<2xi64>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<i64>, tensor<i64>
  }
}
