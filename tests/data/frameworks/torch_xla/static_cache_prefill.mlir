module @IrToHlo.502 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<8x16xf32>, %arg1: tensor<8xf32>, %arg2: tensor<16x8xf32>, %arg3: tensor<8x16xf32>, %arg4: tensor<8xf32>, %arg5: tensor<8x8xf32>, %arg6: tensor<8x24xf32>, %arg7: tensor<8xf32>, %arg8: tensor<16x8xf32>, %arg9: tensor<8x16xf32>, %arg10: tensor<8xf32>, %arg11: tensor<8x8xf32>, %arg12: tensor<8x24xf32>, %arg13: tensor<8xf32>, %arg14: tensor<i64>, %arg15: tensor<8x8xf32>, %arg16: tensor<4x5xi64>, %arg17: tensor<i64>, %arg18: tensor<16x8xf32>, %arg19: tensor<f64>, %arg20: tensor<f32>) -> (tensor<4x16xf32>, tensor<4xi64>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<4xf32>
    %cst_1 = stablehlo.constant dense<3.000000e+00> : tensor<4x5x16xf32>
    %cst_2 = stablehlo.constant dense<4.471500e-02> : tensor<4x5x16xf32>
    %cst_3 = stablehlo.constant dense<0.797884583> : tensor<4x5x16xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<4x5x16xf32>
    %cst_5 = stablehlo.constant dense<5.000000e-01> : tensor<4x5x16xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<4x2x8x4xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<20xf32>
    %cst_8 = stablehlo.constant dense<1.000000e+00> : tensor<20xf32>
    %c = stablehlo.constant dense<[[0], [1], [2], [3], [4]]> : tensor<5x1xi64>
    %c_9 = stablehlo.constant dense<0> : tensor<i32>
    %cst_10 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_11 = stablehlo.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
    %c_12 = stablehlo.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi64>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c_14 = stablehlo.constant dense<0> : tensor<4x5xi64>
    %0 = stablehlo.compare  LT, %arg16, %c_14 : (tensor<4x5xi64>, tensor<4x5xi64>) -> tensor<4x5xi1>
    %1 = stablehlo.broadcast_in_dim %arg17, dims = [] : (tensor<i64>) -> tensor<4x5xi64>
    %2 = stablehlo.add %arg16, %1 : tensor<4x5xi64>
    %3 = stablehlo.select %0, %2, %arg16 : tensor<4x5xi1>, tensor<4x5xi64>
    %4 = stablehlo.reshape %3 : (tensor<4x5xi64>) -> tensor<4x5x1xi64>
    %5 = "stablehlo.gather"(%arg18, %4) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 8>}> : (tensor<16x8xf32>, tensor<4x5x1xi64>) -> tensor<4x5x8xf32>
    %6 = "stablehlo.gather"(%arg15, %c) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 8>}> : (tensor<8x8xf32>, tensor<5x1xi64>) -> tensor<5x8xf32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [1, 2] : (tensor<5x8xf32>) -> tensor<4x5x8xf32>
    %8 = stablehlo.add %5, %7 : tensor<4x5x8xf32>
    %9 = stablehlo.reshape %8 : (tensor<4x5x8xf32>) -> tensor<1x20x8xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%9, %cst_8, %cst_7) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x20x8xf32>, tensor<20xf32>, tensor<20xf32>) -> (tensor<1x20x8xf32>, tensor<20xf32>, tensor<20xf32>)
    %10 = stablehlo.broadcast_in_dim %c_11, dims = [1] : (tensor<8xi64>) -> tensor<5x8xi64>
    %11 = stablehlo.broadcast_in_dim %c_12, dims = [0] : (tensor<5xi64>) -> tensor<5x8xi64>
    %12 = stablehlo.compare  LE, %10, %11 : (tensor<5x8xi64>, tensor<5x8xi64>) -> tensor<5x8xi1>
    %13 = stablehlo.convert %arg19 : (tensor<f64>) -> tensor<f32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [] : (tensor<f32>) -> tensor<4x2x5x8xf32>
    %15 = stablehlo.reshape %output : (tensor<1x20x8xf32>) -> tensor<4x5x8xf32>
    %16 = stablehlo.broadcast_in_dim %arg13, dims = [2] : (tensor<8xf32>) -> tensor<4x5x8xf32>
    %17 = stablehlo.multiply %15, %16 : tensor<4x5x8xf32>
    %18 = stablehlo.reshape %17 : (tensor<4x5x8xf32>) -> tensor<20x8xf32>
    %19 = stablehlo.dot_general %18, %arg12, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<20x8xf32>, tensor<8x24xf32>) -> tensor<20x24xf32>
    %20 = stablehlo.reshape %19 : (tensor<20x24xf32>) -> tensor<4x5x3x2x4xf32>
    %21 = stablehlo.transpose %20, dims = [2, 0, 3, 1, 4] {result_layout = dense<[4, 2, 0, 3, 1]> : tensor<5xindex>, xla_shape = "f32[3,4,2,5,4]{4,2,0,3,1}"} : (tensor<4x5x3x2x4xf32>) -> tensor<3x4x2x5x4xf32>
    %22 = stablehlo.slice %21 [0:1, 0:4, 0:2, 0:5, 0:4] : (tensor<3x4x2x5x4xf32>) -> tensor<1x4x2x5x4xf32>
    %23 = stablehlo.reshape %22 : (tensor<1x4x2x5x4xf32>) -> tensor<8x5x4xf32>
    %24 = stablehlo.slice %21 [1:2, 0:4, 0:2, 0:5, 0:4] : (tensor<3x4x2x5x4xf32>) -> tensor<1x4x2x5x4xf32>
    %25 = stablehlo.reshape %24 : (tensor<1x4x2x5x4xf32>) -> tensor<4x2x5x4xf32>
    %26 = "stablehlo.scatter"(%cst_6, %c_12, %25) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg21: tensor<f32>, %arg22: tensor<f32>):
      stablehlo.return %arg22 : tensor<f32>
    }) : (tensor<4x2x8x4xf32>, tensor<5xi64>, tensor<4x2x5x4xf32>) -> tensor<4x2x8x4xf32>
    %27 = stablehlo.transpose %26, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[4,2,4,8]{2,3,1,0}"} : (tensor<4x2x8x4xf32>) -> tensor<4x2x4x8xf32>
    %28 = stablehlo.reshape %27 : (tensor<4x2x4x8xf32>) -> tensor<8x4x8xf32>
    %29 = stablehlo.dot_general %23, %28, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x8xf32>) -> tensor<8x5x8xf32>
    %30 = stablehlo.reshape %29 : (tensor<8x5x8xf32>) -> tensor<4x2x5x8xf32>
    %31 = stablehlo.broadcast_in_dim %arg20, dims = [] : (tensor<f32>) -> tensor<4x2x5x8xf32>
    %32 = stablehlo.divide %30, %31 : tensor<4x2x5x8xf32>
    %33 = stablehlo.broadcast_in_dim %12, dims = [2, 3] : (tensor<5x8xi1>) -> tensor<4x2x5x8xi1>
    %34 = stablehlo.select %33, %32, %14 : tensor<4x2x5x8xi1>, tensor<4x2x5x8xf32>
    %35 = stablehlo.reduce(%34 init: %cst_10) applies stablehlo.maximum across dimensions = [3] : (tensor<4x2x5x8xf32>, tensor<f32>) -> tensor<4x2x5xf32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [0, 1, 2] : (tensor<4x2x5xf32>) -> tensor<4x2x5x8xf32>
    %37 = stablehlo.subtract %34, %36 : tensor<4x2x5x8xf32>
    %38 = stablehlo.exponential %37 : tensor<4x2x5x8xf32>
    %39 = stablehlo.reduce(%38 init: %cst_13) applies stablehlo.add across dimensions = [3] : (tensor<4x2x5x8xf32>, tensor<f32>) -> tensor<4x2x5xf32>
    %40 = stablehlo.broadcast_in_dim %39, dims = [0, 1, 2] : (tensor<4x2x5xf32>) -> tensor<4x2x5x8xf32>
    %41 = stablehlo.divide %38, %40 : tensor<4x2x5x8xf32>
    %42 = stablehlo.reshape %41 : (tensor<4x2x5x8xf32>) -> tensor<8x5x8xf32>
    %43 = stablehlo.slice %21 [2:3, 0:4, 0:2, 0:5, 0:4] : (tensor<3x4x2x5x4xf32>) -> tensor<1x4x2x5x4xf32>
    %44 = stablehlo.reshape %43 : (tensor<1x4x2x5x4xf32>) -> tensor<4x2x5x4xf32>
    %45 = "stablehlo.scatter"(%cst_6, %c, %44) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg21: tensor<f32>, %arg22: tensor<f32>):
      stablehlo.return %arg22 : tensor<f32>
    }) : (tensor<4x2x8x4xf32>, tensor<5x1xi64>, tensor<4x2x5x4xf32>) -> tensor<4x2x8x4xf32>
    %46 = stablehlo.reshape %45 : (tensor<4x2x8x4xf32>) -> tensor<8x8x4xf32>
    %47 = stablehlo.dot_general %42, %46, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x8xf32>, tensor<8x8x4xf32>) -> tensor<8x5x4xf32>
    %48 = stablehlo.reshape %47 : (tensor<8x5x4xf32>) -> tensor<4x2x5x4xf32>
    %49 = stablehlo.transpose %48, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[4,5,2,4]{3,1,2,0}"} : (tensor<4x2x5x4xf32>) -> tensor<4x5x2x4xf32>
    %50 = stablehlo.reshape %49 : (tensor<4x5x2x4xf32>) -> tensor<20x8xf32>
    %51 = stablehlo.dot_general %50, %arg11, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<20x8xf32>, tensor<8x8xf32>) -> tensor<20x8xf32>
    %52 = stablehlo.reshape %51 : (tensor<20x8xf32>) -> tensor<4x5x8xf32>
    %53 = stablehlo.add %8, %52 : tensor<4x5x8xf32>
    %54 = stablehlo.reshape %53 : (tensor<4x5x8xf32>) -> tensor<1x20x8xf32>
    %output_15, %batch_mean_16, %batch_var_17 = "stablehlo.batch_norm_training"(%54, %cst_8, %cst_7) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x20x8xf32>, tensor<20xf32>, tensor<20xf32>) -> (tensor<1x20x8xf32>, tensor<20xf32>, tensor<20xf32>)
    %55 = stablehlo.reshape %output_15 : (tensor<1x20x8xf32>) -> tensor<4x5x8xf32>
    %56 = stablehlo.broadcast_in_dim %arg10, dims = [2] : (tensor<8xf32>) -> tensor<4x5x8xf32>
    %57 = stablehlo.multiply %55, %56 : tensor<4x5x8xf32>
    %58 = stablehlo.reshape %57 : (tensor<4x5x8xf32>) -> tensor<20x8xf32>
    %59 = stablehlo.dot_general %58, %arg9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<20x8xf32>, tensor<8x16xf32>) -> tensor<20x16xf32>
    %60 = stablehlo.reshape %59 : (tensor<20x16xf32>) -> tensor<4x5x16xf32>
    %61 = stablehlo.multiply %60, %cst_5 : tensor<4x5x16xf32>
    %62 = stablehlo.power %60, %cst_1 : tensor<4x5x16xf32>
    %63 = stablehlo.multiply %62, %cst_2 : tensor<4x5x16xf32>
    %64 = stablehlo.add %60, %63 : tensor<4x5x16xf32>
    %65 = stablehlo.multiply %64, %cst_3 : tensor<4x5x16xf32>
    %66 = stablehlo.tanh %65 : tensor<4x5x16xf32>
    %67 = stablehlo.add %66, %cst_4 : tensor<4x5x16xf32>
    %68 = stablehlo.multiply %61, %67 : tensor<4x5x16xf32>
    %69 = stablehlo.reshape %68 : (tensor<4x5x16xf32>) -> tensor<20x16xf32>
    %70 = stablehlo.dot_general %69, %arg8, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<20x16xf32>, tensor<16x8xf32>) -> tensor<20x8xf32>
    %71 = stablehlo.reshape %70 : (tensor<20x8xf32>) -> tensor<4x5x8xf32>
    %72 = stablehlo.add %53, %71 : tensor<4x5x8xf32>
    %73 = stablehlo.reshape %72 : (tensor<4x5x8xf32>) -> tensor<1x20x8xf32>
    %output_18, %batch_mean_19, %batch_var_20 = "stablehlo.batch_norm_training"(%73, %cst_8, %cst_7) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x20x8xf32>, tensor<20xf32>, tensor<20xf32>) -> (tensor<1x20x8xf32>, tensor<20xf32>, tensor<20xf32>)
    %74 = stablehlo.reshape %output_18 : (tensor<1x20x8xf32>) -> tensor<4x5x8xf32>
    %75 = stablehlo.broadcast_in_dim %arg7, dims = [2] : (tensor<8xf32>) -> tensor<4x5x8xf32>
    %76 = stablehlo.multiply %74, %75 : tensor<4x5x8xf32>
    %77 = stablehlo.reshape %76 : (tensor<4x5x8xf32>) -> tensor<20x8xf32>
    %78 = stablehlo.dot_general %77, %arg6, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<20x8xf32>, tensor<8x24xf32>) -> tensor<20x24xf32>
    %79 = stablehlo.reshape %78 : (tensor<20x24xf32>) -> tensor<4x5x3x2x4xf32>
    %80 = stablehlo.transpose %79, dims = [2, 0, 3, 1, 4] {result_layout = dense<[4, 2, 0, 3, 1]> : tensor<5xindex>, xla_shape = "f32[3,4,2,5,4]{4,2,0,3,1}"} : (tensor<4x5x3x2x4xf32>) -> tensor<3x4x2x5x4xf32>
    %81 = stablehlo.slice %80 [0:1, 0:4, 0:2, 0:5, 0:4] : (tensor<3x4x2x5x4xf32>) -> tensor<1x4x2x5x4xf32>
    %82 = stablehlo.reshape %81 : (tensor<1x4x2x5x4xf32>) -> tensor<8x5x4xf32>
    %83 = stablehlo.slice %80 [1:2, 0:4, 0:2, 0:5, 0:4] : (tensor<3x4x2x5x4xf32>) -> tensor<1x4x2x5x4xf32>
    %84 = stablehlo.reshape %83 : (tensor<1x4x2x5x4xf32>) -> tensor<4x2x5x4xf32>
    %85 = "stablehlo.scatter"(%cst_6, %c_12, %84) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg21: tensor<f32>, %arg22: tensor<f32>):
      stablehlo.return %arg22 : tensor<f32>
    }) : (tensor<4x2x8x4xf32>, tensor<5xi64>, tensor<4x2x5x4xf32>) -> tensor<4x2x8x4xf32>
    %86 = stablehlo.transpose %85, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[4,2,4,8]{2,3,1,0}"} : (tensor<4x2x8x4xf32>) -> tensor<4x2x4x8xf32>
    %87 = stablehlo.reshape %86 : (tensor<4x2x4x8xf32>) -> tensor<8x4x8xf32>
    %88 = stablehlo.dot_general %82, %87, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x8xf32>) -> tensor<8x5x8xf32>
    %89 = stablehlo.reshape %88 : (tensor<8x5x8xf32>) -> tensor<4x2x5x8xf32>
    %90 = stablehlo.divide %89, %31 : tensor<4x2x5x8xf32>
    %91 = stablehlo.select %33, %90, %14 : tensor<4x2x5x8xi1>, tensor<4x2x5x8xf32>
    %92 = stablehlo.reduce(%91 init: %cst_10) applies stablehlo.maximum across dimensions = [3] : (tensor<4x2x5x8xf32>, tensor<f32>) -> tensor<4x2x5xf32>
    %93 = stablehlo.broadcast_in_dim %92, dims = [0, 1, 2] : (tensor<4x2x5xf32>) -> tensor<4x2x5x8xf32>
    %94 = stablehlo.subtract %91, %93 : tensor<4x2x5x8xf32>
    %95 = stablehlo.exponential %94 : tensor<4x2x5x8xf32>
    %96 = stablehlo.reduce(%95 init: %cst_13) applies stablehlo.add across dimensions = [3] : (tensor<4x2x5x8xf32>, tensor<f32>) -> tensor<4x2x5xf32>
    %97 = stablehlo.broadcast_in_dim %96, dims = [0, 1, 2] : (tensor<4x2x5xf32>) -> tensor<4x2x5x8xf32>
    %98 = stablehlo.divide %95, %97 : tensor<4x2x5x8xf32>
    %99 = stablehlo.reshape %98 : (tensor<4x2x5x8xf32>) -> tensor<8x5x8xf32>
    %100 = stablehlo.slice %80 [2:3, 0:4, 0:2, 0:5, 0:4] : (tensor<3x4x2x5x4xf32>) -> tensor<1x4x2x5x4xf32>
    %101 = stablehlo.reshape %100 : (tensor<1x4x2x5x4xf32>) -> tensor<4x2x5x4xf32>
    %102 = "stablehlo.scatter"(%cst_6, %c, %101) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg21: tensor<f32>, %arg22: tensor<f32>):
      stablehlo.return %arg22 : tensor<f32>
    }) : (tensor<4x2x8x4xf32>, tensor<5x1xi64>, tensor<4x2x5x4xf32>) -> tensor<4x2x8x4xf32>
    %103 = stablehlo.reshape %102 : (tensor<4x2x8x4xf32>) -> tensor<8x8x4xf32>
    %104 = stablehlo.dot_general %99, %103, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x8xf32>, tensor<8x8x4xf32>) -> tensor<8x5x4xf32>
    %105 = stablehlo.reshape %104 : (tensor<8x5x4xf32>) -> tensor<4x2x5x4xf32>
    %106 = stablehlo.transpose %105, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[4,5,2,4]{3,1,2,0}"} : (tensor<4x2x5x4xf32>) -> tensor<4x5x2x4xf32>
    %107 = stablehlo.reshape %106 : (tensor<4x5x2x4xf32>) -> tensor<20x8xf32>
    %108 = stablehlo.dot_general %107, %arg5, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<20x8xf32>, tensor<8x8xf32>) -> tensor<20x8xf32>
    %109 = stablehlo.reshape %108 : (tensor<20x8xf32>) -> tensor<4x5x8xf32>
    %110 = stablehlo.add %72, %109 : tensor<4x5x8xf32>
    %111 = stablehlo.reshape %110 : (tensor<4x5x8xf32>) -> tensor<1x20x8xf32>
    %output_21, %batch_mean_22, %batch_var_23 = "stablehlo.batch_norm_training"(%111, %cst_8, %cst_7) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x20x8xf32>, tensor<20xf32>, tensor<20xf32>) -> (tensor<1x20x8xf32>, tensor<20xf32>, tensor<20xf32>)
    %112 = stablehlo.reshape %output_21 : (tensor<1x20x8xf32>) -> tensor<4x5x8xf32>
    %113 = stablehlo.broadcast_in_dim %arg4, dims = [2] : (tensor<8xf32>) -> tensor<4x5x8xf32>
    %114 = stablehlo.multiply %112, %113 : tensor<4x5x8xf32>
    %115 = stablehlo.reshape %114 : (tensor<4x5x8xf32>) -> tensor<20x8xf32>
    %116 = stablehlo.dot_general %115, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<20x8xf32>, tensor<8x16xf32>) -> tensor<20x16xf32>
    %117 = stablehlo.reshape %116 : (tensor<20x16xf32>) -> tensor<4x5x16xf32>
    %118 = stablehlo.multiply %117, %cst_5 : tensor<4x5x16xf32>
    %119 = stablehlo.power %117, %cst_1 : tensor<4x5x16xf32>
    %120 = stablehlo.multiply %119, %cst_2 : tensor<4x5x16xf32>
    %121 = stablehlo.add %117, %120 : tensor<4x5x16xf32>
    %122 = stablehlo.multiply %121, %cst_3 : tensor<4x5x16xf32>
    %123 = stablehlo.tanh %122 : tensor<4x5x16xf32>
    %124 = stablehlo.add %123, %cst_4 : tensor<4x5x16xf32>
    %125 = stablehlo.multiply %118, %124 : tensor<4x5x16xf32>
    %126 = stablehlo.reshape %125 : (tensor<4x5x16xf32>) -> tensor<20x16xf32>
    %127 = stablehlo.dot_general %126, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<20x16xf32>, tensor<16x8xf32>) -> tensor<20x8xf32>
    %128 = stablehlo.reshape %127 : (tensor<20x8xf32>) -> tensor<4x5x8xf32>
    %129 = stablehlo.add %110, %128 : tensor<4x5x8xf32>
    %130 = stablehlo.slice %129 [0:4, 4:5, 0:8] : (tensor<4x5x8xf32>) -> tensor<4x1x8xf32>
    %131 = stablehlo.reshape %130 : (tensor<4x1x8xf32>) -> tensor<1x4x8xf32>
    %output_24, %batch_mean_25, %batch_var_26 = "stablehlo.batch_norm_training"(%131, %cst_0, %cst) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
    %132 = stablehlo.reshape %output_24 : (tensor<1x4x8xf32>) -> tensor<4x8xf32>
    %133 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
    %134 = stablehlo.multiply %132, %133 : tensor<4x8xf32>
    %135 = stablehlo.dot_general %134, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %136 = stablehlo.iota dim = 0 : tensor<16xi32>
    %137 = stablehlo.broadcast_in_dim %136, dims = [1] : (tensor<16xi32>) -> tensor<4x16xi32>
    %138:2 = stablehlo.reduce(%135 init: %cst_10), (%137 init: %c_9) across dimensions = [1] : (tensor<4x16xf32>, tensor<4x16xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
     reducer(%arg21: tensor<f32>, %arg23: tensor<f32>) (%arg22: tensor<i32>, %arg24: tensor<i32>)  {
      %140 = stablehlo.compare  GE, %arg21, %arg23 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %141 = stablehlo.select %140, %arg21, %arg23 : tensor<i1>, tensor<f32>
      %142 = stablehlo.compare  EQ, %arg21, %arg23 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %143 = stablehlo.minimum %arg22, %arg24 : tensor<i32>
      %144 = stablehlo.select %140, %arg22, %arg24 : tensor<i1>, tensor<i32>
      %145 = stablehlo.select %142, %143, %144 : tensor<i1>, tensor<i32>
      stablehlo.return %141, %145 : tensor<f32>, tensor<i32>
    }
    %139 = stablehlo.convert %138#1 : (tensor<4xi32>) -> tensor<4xi64>
    return %135, %139, %26, %45, %85, %102 : tensor<4x16xf32>, tensor<4xi64>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>
  }
}
