module @IrToHlo.479 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<8x16xf32>, %arg1: tensor<8xf32>, %arg2: tensor<16x8xf32>, %arg3: tensor<8x16xf32>, %arg4: tensor<8xf32>, %arg5: tensor<8x8xf32>, %arg6: tensor<8x24xf32>, %arg7: tensor<8xf32>, %arg8: tensor<16x8xf32>, %arg9: tensor<8x16xf32>, %arg10: tensor<8xf32>, %arg11: tensor<8x8xf32>, %arg12: tensor<8x24xf32>, %arg13: tensor<8xf32>, %arg14: tensor<1xi64>, %arg15: tensor<i64>, %arg16: tensor<8x8xf32>, %arg17: tensor<4xi64>, %arg18: tensor<i64>, %arg19: tensor<16x8xf32>, %arg20: tensor<4x2x8x4xf32>, %arg21: tensor<f64>, %arg22: tensor<f32>, %arg23: tensor<4x2x8x4xf32>, %arg24: tensor<4x2x8x4xf32>, %arg25: tensor<4x2x8x4xf32>) -> (tensor<4x16xf32>, tensor<4xi64>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>) {
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<4x1x16xf32>
    %cst_0 = stablehlo.constant dense<4.471500e-02> : tensor<4x1x16xf32>
    %cst_1 = stablehlo.constant dense<0.797884583> : tensor<4x1x16xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<4x1x16xf32>
    %cst_3 = stablehlo.constant dense<5.000000e-01> : tensor<4x1x16xf32>
    %c = stablehlo.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<4xf32>
    %c_6 = stablehlo.constant dense<0> : tensor<1xi64>
    %c_7 = stablehlo.constant dense<0> : tensor<4x1xi64>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %cst_9 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reshape %arg17 : (tensor<4xi64>) -> tensor<4x1xi64>
    %1 = stablehlo.compare  LT, %0, %c_7 : (tensor<4x1xi64>, tensor<4x1xi64>) -> tensor<4x1xi1>
    %2 = stablehlo.reshape %arg18 : (tensor<i64>) -> tensor<1xi64>
    %3 = stablehlo.broadcast_in_dim %2, dims = [1] : (tensor<1xi64>) -> tensor<4x1xi64>
    %4 = stablehlo.add %0, %3 : tensor<4x1xi64>
    %5 = stablehlo.select %1, %4, %0 : tensor<4x1xi1>, tensor<4x1xi64>
    %6 = stablehlo.reshape %5 : (tensor<4x1xi64>) -> tensor<4x1x1xi64>
    %7 = "stablehlo.gather"(%arg19, %6) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 8>}> : (tensor<16x8xf32>, tensor<4x1x1xi64>) -> tensor<4x1x8xf32>
    %8 = stablehlo.compare  LT, %arg14, %c_6 : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi1>
    %9 = stablehlo.reshape %arg15 : (tensor<i64>) -> tensor<1xi64>
    %10 = stablehlo.add %arg14, %9 : tensor<1xi64>
    %11 = stablehlo.select %8, %10, %arg14 : tensor<1xi1>, tensor<1xi64>
    %12 = stablehlo.reshape %11 : (tensor<1xi64>) -> tensor<1x1xi64>
    %13 = "stablehlo.gather"(%arg16, %12) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 8>}> : (tensor<8x8xf32>, tensor<1x1xi64>) -> tensor<1x8xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [1, 2] : (tensor<1x8xf32>) -> tensor<4x1x8xf32>
    %15 = stablehlo.add %7, %14 : tensor<4x1x8xf32>
    %16 = stablehlo.reshape %15 : (tensor<4x1x8xf32>) -> tensor<1x4x8xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%16, %cst_5, %cst_4) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
    %17 = stablehlo.broadcast_in_dim %arg14, dims = [0] : (tensor<1xi64>) -> tensor<1x8xi64>
    %18 = stablehlo.compare  LE, %c, %17 : (tensor<1x8xi64>, tensor<1x8xi64>) -> tensor<1x8xi1>
    %19 = stablehlo.convert %arg21 : (tensor<f64>) -> tensor<f32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [] : (tensor<f32>) -> tensor<4x2x1x8xf32>
    %21 = stablehlo.reshape %output : (tensor<1x4x8xf32>) -> tensor<4x1x8xf32>
    %22 = stablehlo.broadcast_in_dim %arg13, dims = [2] : (tensor<8xf32>) -> tensor<4x1x8xf32>
    %23 = stablehlo.multiply %21, %22 : tensor<4x1x8xf32>
    %24 = stablehlo.reshape %23 : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
    %25 = stablehlo.dot_general %24, %arg12, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
    %26 = stablehlo.reshape %25 : (tensor<4x24xf32>) -> tensor<4x1x3x2x4xf32>
    %27 = stablehlo.transpose %26, dims = [2, 0, 3, 1, 4] {result_layout = dense<[4, 2, 0, 3, 1]> : tensor<5xindex>, xla_shape = "f32[3,4,2,1,4]{4,2,0,3,1}"} : (tensor<4x1x3x2x4xf32>) -> tensor<3x4x2x1x4xf32>
    %28 = stablehlo.slice %27 [0:1, 0:4, 0:2, 0:1, 0:4] : (tensor<3x4x2x1x4xf32>) -> tensor<1x4x2x1x4xf32>
    %29 = stablehlo.reshape %28 : (tensor<1x4x2x1x4xf32>) -> tensor<8x1x4xf32>
    %30 = stablehlo.slice %27 [1:2, 0:4, 0:2, 0:1, 0:4] : (tensor<3x4x2x1x4xf32>) -> tensor<1x4x2x1x4xf32>
    %31 = stablehlo.reshape %30 : (tensor<1x4x2x1x4xf32>) -> tensor<4x2x1x4xf32>
    %32 = "stablehlo.scatter"(%arg23, %arg14, %31) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      stablehlo.return %arg27 : tensor<f32>
    }) : (tensor<4x2x8x4xf32>, tensor<1xi64>, tensor<4x2x1x4xf32>) -> tensor<4x2x8x4xf32>
    %33 = stablehlo.transpose %32, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[4,2,4,8]{2,3,1,0}"} : (tensor<4x2x8x4xf32>) -> tensor<4x2x4x8xf32>
    %34 = stablehlo.reshape %33 : (tensor<4x2x4x8xf32>) -> tensor<8x4x8xf32>
    %35 = stablehlo.dot_general %29, %34, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x1x4xf32>, tensor<8x4x8xf32>) -> tensor<8x1x8xf32>
    %36 = stablehlo.reshape %35 : (tensor<8x1x8xf32>) -> tensor<4x2x1x8xf32>
    %37 = stablehlo.broadcast_in_dim %arg22, dims = [] : (tensor<f32>) -> tensor<4x2x1x8xf32>
    %38 = stablehlo.divide %36, %37 : tensor<4x2x1x8xf32>
    %39 = stablehlo.broadcast_in_dim %18, dims = [2, 3] : (tensor<1x8xi1>) -> tensor<4x2x1x8xi1>
    %40 = stablehlo.select %39, %38, %20 : tensor<4x2x1x8xi1>, tensor<4x2x1x8xf32>
    %41 = stablehlo.reduce(%40 init: %cst_9) applies stablehlo.maximum across dimensions = [3] : (tensor<4x2x1x8xf32>, tensor<f32>) -> tensor<4x2x1xf32>
    %42 = stablehlo.broadcast_in_dim %41, dims = [0, 1, 2] : (tensor<4x2x1xf32>) -> tensor<4x2x1x8xf32>
    %43 = stablehlo.subtract %40, %42 : tensor<4x2x1x8xf32>
    %44 = stablehlo.exponential %43 : tensor<4x2x1x8xf32>
    %45 = stablehlo.reduce(%44 init: %cst_10) applies stablehlo.add across dimensions = [3] : (tensor<4x2x1x8xf32>, tensor<f32>) -> tensor<4x2x1xf32>
    %46 = stablehlo.broadcast_in_dim %45, dims = [0, 1, 2] : (tensor<4x2x1xf32>) -> tensor<4x2x1x8xf32>
    %47 = stablehlo.divide %44, %46 : tensor<4x2x1x8xf32>
    %48 = stablehlo.reshape %47 : (tensor<4x2x1x8xf32>) -> tensor<8x1x8xf32>
    %49 = stablehlo.slice %27 [2:3, 0:4, 0:2, 0:1, 0:4] : (tensor<3x4x2x1x4xf32>) -> tensor<1x4x2x1x4xf32>
    %50 = stablehlo.reshape %49 : (tensor<1x4x2x1x4xf32>) -> tensor<4x2x1x4xf32>
    %51 = "stablehlo.scatter"(%arg20, %12, %50) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      stablehlo.return %arg27 : tensor<f32>
    }) : (tensor<4x2x8x4xf32>, tensor<1x1xi64>, tensor<4x2x1x4xf32>) -> tensor<4x2x8x4xf32>
    %52 = stablehlo.reshape %51 : (tensor<4x2x8x4xf32>) -> tensor<8x8x4xf32>
    %53 = stablehlo.dot_general %48, %52, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x1x8xf32>, tensor<8x8x4xf32>) -> tensor<8x1x4xf32>
    %54 = stablehlo.reshape %53 : (tensor<8x1x4xf32>) -> tensor<4x8xf32>
    %55 = stablehlo.dot_general %54, %arg11, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %56 = stablehlo.reshape %55 : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
    %57 = stablehlo.add %15, %56 : tensor<4x1x8xf32>
    %58 = stablehlo.reshape %57 : (tensor<4x1x8xf32>) -> tensor<1x4x8xf32>
    %output_11, %batch_mean_12, %batch_var_13 = "stablehlo.batch_norm_training"(%58, %cst_5, %cst_4) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
    %59 = stablehlo.reshape %output_11 : (tensor<1x4x8xf32>) -> tensor<4x1x8xf32>
    %60 = stablehlo.broadcast_in_dim %arg10, dims = [2] : (tensor<8xf32>) -> tensor<4x1x8xf32>
    %61 = stablehlo.multiply %59, %60 : tensor<4x1x8xf32>
    %62 = stablehlo.reshape %61 : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
    %63 = stablehlo.dot_general %62, %arg9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %64 = stablehlo.reshape %63 : (tensor<4x16xf32>) -> tensor<4x1x16xf32>
    %65 = stablehlo.multiply %64, %cst_3 : tensor<4x1x16xf32>
    %66 = stablehlo.power %64, %cst : tensor<4x1x16xf32>
    %67 = stablehlo.multiply %66, %cst_0 : tensor<4x1x16xf32>
    %68 = stablehlo.add %64, %67 : tensor<4x1x16xf32>
    %69 = stablehlo.multiply %68, %cst_1 : tensor<4x1x16xf32>
    %70 = stablehlo.tanh %69 : tensor<4x1x16xf32>
    %71 = stablehlo.add %70, %cst_2 : tensor<4x1x16xf32>
    %72 = stablehlo.multiply %65, %71 : tensor<4x1x16xf32>
    %73 = stablehlo.reshape %72 : (tensor<4x1x16xf32>) -> tensor<4x16xf32>
    %74 = stablehlo.dot_general %73, %arg8, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %75 = stablehlo.reshape %74 : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
    %76 = stablehlo.add %57, %75 : tensor<4x1x8xf32>
    %77 = stablehlo.reshape %76 : (tensor<4x1x8xf32>) -> tensor<1x4x8xf32>
    %output_14, %batch_mean_15, %batch_var_16 = "stablehlo.batch_norm_training"(%77, %cst_5, %cst_4) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
    %78 = stablehlo.reshape %output_14 : (tensor<1x4x8xf32>) -> tensor<4x1x8xf32>
    %79 = stablehlo.broadcast_in_dim %arg7, dims = [2] : (tensor<8xf32>) -> tensor<4x1x8xf32>
    %80 = stablehlo.multiply %78, %79 : tensor<4x1x8xf32>
    %81 = stablehlo.reshape %80 : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
    %82 = stablehlo.dot_general %81, %arg6, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
    %83 = stablehlo.reshape %82 : (tensor<4x24xf32>) -> tensor<4x1x3x2x4xf32>
    %84 = stablehlo.transpose %83, dims = [2, 0, 3, 1, 4] {result_layout = dense<[4, 2, 0, 3, 1]> : tensor<5xindex>, xla_shape = "f32[3,4,2,1,4]{4,2,0,3,1}"} : (tensor<4x1x3x2x4xf32>) -> tensor<3x4x2x1x4xf32>
    %85 = stablehlo.slice %84 [0:1, 0:4, 0:2, 0:1, 0:4] : (tensor<3x4x2x1x4xf32>) -> tensor<1x4x2x1x4xf32>
    %86 = stablehlo.reshape %85 : (tensor<1x4x2x1x4xf32>) -> tensor<8x1x4xf32>
    %87 = stablehlo.slice %84 [1:2, 0:4, 0:2, 0:1, 0:4] : (tensor<3x4x2x1x4xf32>) -> tensor<1x4x2x1x4xf32>
    %88 = stablehlo.reshape %87 : (tensor<1x4x2x1x4xf32>) -> tensor<4x2x1x4xf32>
    %89 = "stablehlo.scatter"(%arg25, %arg14, %88) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      stablehlo.return %arg27 : tensor<f32>
    }) : (tensor<4x2x8x4xf32>, tensor<1xi64>, tensor<4x2x1x4xf32>) -> tensor<4x2x8x4xf32>
    %90 = stablehlo.transpose %89, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[4,2,4,8]{2,3,1,0}"} : (tensor<4x2x8x4xf32>) -> tensor<4x2x4x8xf32>
    %91 = stablehlo.reshape %90 : (tensor<4x2x4x8xf32>) -> tensor<8x4x8xf32>
    %92 = stablehlo.dot_general %86, %91, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x1x4xf32>, tensor<8x4x8xf32>) -> tensor<8x1x8xf32>
    %93 = stablehlo.reshape %92 : (tensor<8x1x8xf32>) -> tensor<4x2x1x8xf32>
    %94 = stablehlo.divide %93, %37 : tensor<4x2x1x8xf32>
    %95 = stablehlo.select %39, %94, %20 : tensor<4x2x1x8xi1>, tensor<4x2x1x8xf32>
    %96 = stablehlo.reduce(%95 init: %cst_9) applies stablehlo.maximum across dimensions = [3] : (tensor<4x2x1x8xf32>, tensor<f32>) -> tensor<4x2x1xf32>
    %97 = stablehlo.broadcast_in_dim %96, dims = [0, 1, 2] : (tensor<4x2x1xf32>) -> tensor<4x2x1x8xf32>
    %98 = stablehlo.subtract %95, %97 : tensor<4x2x1x8xf32>
    %99 = stablehlo.exponential %98 : tensor<4x2x1x8xf32>
    %100 = stablehlo.reduce(%99 init: %cst_10) applies stablehlo.add across dimensions = [3] : (tensor<4x2x1x8xf32>, tensor<f32>) -> tensor<4x2x1xf32>
    %101 = stablehlo.broadcast_in_dim %100, dims = [0, 1, 2] : (tensor<4x2x1xf32>) -> tensor<4x2x1x8xf32>
    %102 = stablehlo.divide %99, %101 : tensor<4x2x1x8xf32>
    %103 = stablehlo.reshape %102 : (tensor<4x2x1x8xf32>) -> tensor<8x1x8xf32>
    %104 = stablehlo.slice %84 [2:3, 0:4, 0:2, 0:1, 0:4] : (tensor<3x4x2x1x4xf32>) -> tensor<1x4x2x1x4xf32>
    %105 = stablehlo.reshape %104 : (tensor<1x4x2x1x4xf32>) -> tensor<4x2x1x4xf32>
    %106 = "stablehlo.scatter"(%arg24, %12, %105) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      stablehlo.return %arg27 : tensor<f32>
    }) : (tensor<4x2x8x4xf32>, tensor<1x1xi64>, tensor<4x2x1x4xf32>) -> tensor<4x2x8x4xf32>
    %107 = stablehlo.reshape %106 : (tensor<4x2x8x4xf32>) -> tensor<8x8x4xf32>
    %108 = stablehlo.dot_general %103, %107, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x1x8xf32>, tensor<8x8x4xf32>) -> tensor<8x1x4xf32>
    %109 = stablehlo.reshape %108 : (tensor<8x1x4xf32>) -> tensor<4x8xf32>
    %110 = stablehlo.dot_general %109, %arg5, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %111 = stablehlo.reshape %110 : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
    %112 = stablehlo.add %76, %111 : tensor<4x1x8xf32>
    %113 = stablehlo.reshape %112 : (tensor<4x1x8xf32>) -> tensor<1x4x8xf32>
    %output_17, %batch_mean_18, %batch_var_19 = "stablehlo.batch_norm_training"(%113, %cst_5, %cst_4) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
    %114 = stablehlo.reshape %output_17 : (tensor<1x4x8xf32>) -> tensor<4x1x8xf32>
    %115 = stablehlo.broadcast_in_dim %arg4, dims = [2] : (tensor<8xf32>) -> tensor<4x1x8xf32>
    %116 = stablehlo.multiply %114, %115 : tensor<4x1x8xf32>
    %117 = stablehlo.reshape %116 : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
    %118 = stablehlo.dot_general %117, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %119 = stablehlo.reshape %118 : (tensor<4x16xf32>) -> tensor<4x1x16xf32>
    %120 = stablehlo.multiply %119, %cst_3 : tensor<4x1x16xf32>
    %121 = stablehlo.power %119, %cst : tensor<4x1x16xf32>
    %122 = stablehlo.multiply %121, %cst_0 : tensor<4x1x16xf32>
    %123 = stablehlo.add %119, %122 : tensor<4x1x16xf32>
    %124 = stablehlo.multiply %123, %cst_1 : tensor<4x1x16xf32>
    %125 = stablehlo.tanh %124 : tensor<4x1x16xf32>
    %126 = stablehlo.add %125, %cst_2 : tensor<4x1x16xf32>
    %127 = stablehlo.multiply %120, %126 : tensor<4x1x16xf32>
    %128 = stablehlo.reshape %127 : (tensor<4x1x16xf32>) -> tensor<4x16xf32>
    %129 = stablehlo.dot_general %128, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %130 = stablehlo.reshape %129 : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
    %131 = stablehlo.add %112, %130 : tensor<4x1x8xf32>
    %132 = stablehlo.reshape %131 : (tensor<4x1x8xf32>) -> tensor<1x4x8xf32>
    %output_20, %batch_mean_21, %batch_var_22 = "stablehlo.batch_norm_training"(%132, %cst_5, %cst_4) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
    %133 = stablehlo.reshape %output_20 : (tensor<1x4x8xf32>) -> tensor<4x8xf32>
    %134 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
    %135 = stablehlo.multiply %133, %134 : tensor<4x8xf32>
    %136 = stablehlo.dot_general %135, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %137 = stablehlo.iota dim = 0 : tensor<16xi32>
    %138 = stablehlo.broadcast_in_dim %137, dims = [1] : (tensor<16xi32>) -> tensor<4x16xi32>
    %139:2 = stablehlo.reduce(%136 init: %cst_9), (%138 init: %c_8) across dimensions = [1] : (tensor<4x16xf32>, tensor<4x16xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
     reducer(%arg26: tensor<f32>, %arg28: tensor<f32>) (%arg27: tensor<i32>, %arg29: tensor<i32>)  {
      %141 = stablehlo.compare  GE, %arg26, %arg28 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %142 = stablehlo.select %141, %arg26, %arg28 : tensor<i1>, tensor<f32>
      %143 = stablehlo.compare  EQ, %arg26, %arg28 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %144 = stablehlo.minimum %arg27, %arg29 : tensor<i32>
      %145 = stablehlo.select %141, %arg27, %arg29 : tensor<i1>, tensor<i32>
      %146 = stablehlo.select %143, %144, %145 : tensor<i1>, tensor<i32>
      stablehlo.return %142, %146 : tensor<f32>, tensor<i32>
    }
    %140 = stablehlo.convert %139#1 : (tensor<4xi32>) -> tensor<4xi64>
    return %136, %140, %32, %51, %89, %106 : tensor<4x16xf32>, tensor<4xi64>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>
  }
}
