module @IrToHlo.681 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<32x16xf32>, %arg1: tensor<16x32xf32>, %arg2: tensor<32x16xf32>, %arg3: tensor<16x16xf32>, %arg4: tensor<8x16xf32>, %arg5: tensor<16x32xf32>, %arg6: tensor<32x16xf32>, %arg7: tensor<16x16xf32>, %arg8: tensor<8x16xf32>, %arg9: tensor<2x5xi64>, %arg10: tensor<32x16xf32>, %arg11: tensor<16xf32>, %arg12: tensor<i64>, %arg13: tensor<2xf32>, %arg14: tensor<8x16xf32>, %arg15: tensor<16x16xf32>, %arg16: tensor<16xf32>, %arg17: tensor<32x16xf32>, %arg18: tensor<16xf32>, %arg19: tensor<i64>, %arg20: tensor<8x16xf32>, %arg21: tensor<16x16xf32>, %arg22: tensor<16xf32>, %arg23: tensor<32x16xf32>, %arg24: tensor<16xf32>) -> (tensor<2x32xf32>, tensor<2xi64>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<i64>, tensor<i64>) {
    %c = stablehlo.constant dense<5> : tensor<i64>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<2x1x5x8xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<2x1x5x8xf32>
    %c_1 = stablehlo.constant dense<[[[0, 1, 2, 3, 4]]]> : tensor<1x1x5xi64>
    %c_2 = stablehlo.constant dense<[[[0, 1, 2, 3, 4, 5, 6, 7]]]> : tensor<1x1x8xi64>
    %cst_3 = stablehlo.constant dense<0.707106769> : tensor<2x4x4x8xf32>
    %c_4 = stablehlo.constant dense<8> : tensor<5xi64>
    %c_5 = stablehlo.constant dense<0> : tensor<5xi64>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<2x2x8x4xf32>
    %cst_7 = stablehlo.constant dense<0.707106769> : tensor<2x4x5x4xf32>
    %cst_8 = stablehlo.constant dense<[[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]> : tensor<1x5xf32>
    %cst_9 = stablehlo.constant dense<9.99999997E-7> : tensor<2x5x1xf32>
    %cst_10 = stablehlo.constant dense<6.250000e-02> : tensor<2x5xf32>
    %cst_11 = stablehlo.constant dense<2.000000e+00> : tensor<2x5x16xf32>
    %cst_12 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_13 = stablehlo.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi64>
    %c_14 = stablehlo.constant dense<0> : tensor<i32>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg24, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %1 = stablehlo.reshape %arg9 : (tensor<2x5xi64>) -> tensor<10xi64>
    %2 = stablehlo.convert %1 : (tensor<10xi64>) -> tensor<10xui32>
    %3 = "stablehlo.gather"(%arg10, %2) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<32x16xf32>, tensor<10xui32>) -> tensor<10x16xf32>
    %4 = stablehlo.reshape %3 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %5 = stablehlo.broadcast_in_dim %arg11, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %6 = stablehlo.power %4, %cst_11 : tensor<2x5x16xf32>
    %7 = stablehlo.reduce(%6 init: %cst_15) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %8 = stablehlo.multiply %7, %cst_10 : tensor<2x5xf32>
    %9 = stablehlo.reshape %8 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %10 = stablehlo.add %9, %cst_9 : tensor<2x5x1xf32>
    %11 = stablehlo.rsqrt %10 : tensor<2x5x1xf32>
    %12 = stablehlo.reshape %11 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %14 = stablehlo.multiply %4, %13 : tensor<2x5x16xf32>
    %15 = stablehlo.multiply %5, %14 : tensor<2x5x16xf32>
    %16 = stablehlo.reshape %15 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %17 = stablehlo.transpose %arg15, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %18 = stablehlo.dot_general %16, %17, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %19 = stablehlo.reshape %18 : (tensor<10x16xf32>) -> tensor<2x5x4x4xf32>
    %20 = stablehlo.transpose %19, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,5,4]{3,1,2,0}"} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
    %21 = stablehlo.broadcast_in_dim %cst_8, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<1x5x2xf32>
    %22 = stablehlo.broadcast_in_dim %arg13, dims = [2] : (tensor<2xf32>) -> tensor<1x5x2xf32>
    %23 = stablehlo.multiply %21, %22 : tensor<1x5x2xf32>
    %24 = stablehlo.concatenate %23, %23, dim = 2 : (tensor<1x5x2xf32>, tensor<1x5x2xf32>) -> tensor<1x5x4xf32>
    %25 = stablehlo.cosine %24 : tensor<1x5x4xf32>
    %26 = stablehlo.reshape %25 : (tensor<1x5x4xf32>) -> tensor<5x4xf32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x4x5x4xf32>
    %28 = stablehlo.multiply %20, %27 : tensor<2x4x5x4xf32>
    %29 = stablehlo.slice %20 [0:2, 0:4, 0:5, 2:4] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %30 = stablehlo.negate %29 : tensor<2x4x5x2xf32>
    %31 = stablehlo.slice %20 [0:2, 0:4, 0:5, 0:2] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %32 = stablehlo.concatenate %30, %31, dim = 3 : (tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>) -> tensor<2x4x5x4xf32>
    %33 = stablehlo.sine %24 : tensor<1x5x4xf32>
    %34 = stablehlo.reshape %33 : (tensor<1x5x4xf32>) -> tensor<5x4xf32>
    %35 = stablehlo.broadcast_in_dim %34, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x4x5x4xf32>
    %36 = stablehlo.multiply %32, %35 : tensor<2x4x5x4xf32>
    %37 = stablehlo.add %28, %36 : tensor<2x4x5x4xf32>
    %38 = stablehlo.multiply %37, %cst_7 : tensor<2x4x5x4xf32>
    %39 = stablehlo.reshape %38 : (tensor<2x4x5x4xf32>) -> tensor<8x5x4xf32>
    %40 = stablehlo.broadcast_in_dim %arg12, dims = [] : (tensor<i64>) -> tensor<5xi64>
    %41 = stablehlo.add %40, %c_13 : tensor<5xi64>
    %42 = stablehlo.compare  LT, %41, %c_5 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
    %43 = stablehlo.add %41, %c_4 : tensor<5xi64>
    %44 = stablehlo.select %42, %43, %41 : tensor<5xi1>, tensor<5xi64>
    %45 = stablehlo.reshape %44 : (tensor<5xi64>) -> tensor<5x1xi64>
    %46 = stablehlo.transpose %arg14, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %47 = stablehlo.dot_general %16, %46, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %48 = stablehlo.reshape %47 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %49 = stablehlo.transpose %48, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %50 = stablehlo.broadcast_in_dim %26, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x2x5x4xf32>
    %51 = stablehlo.multiply %49, %50 : tensor<2x2x5x4xf32>
    %52 = stablehlo.slice %49 [0:2, 0:2, 0:5, 2:4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %53 = stablehlo.negate %52 : tensor<2x2x5x2xf32>
    %54 = stablehlo.slice %49 [0:2, 0:2, 0:5, 0:2] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %55 = stablehlo.concatenate %53, %54, dim = 3 : (tensor<2x2x5x2xf32>, tensor<2x2x5x2xf32>) -> tensor<2x2x5x4xf32>
    %56 = stablehlo.broadcast_in_dim %34, dims = [2, 3] : (tensor<5x4xf32>) -> tensor<2x2x5x4xf32>
    %57 = stablehlo.multiply %55, %56 : tensor<2x2x5x4xf32>
    %58 = stablehlo.add %51, %57 : tensor<2x2x5x4xf32>
    %59 = "stablehlo.scatter"(%cst_6, %45, %58) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg25: tensor<f32>, %arg26: tensor<f32>):
      stablehlo.return %arg26 : tensor<f32>
    }) : (tensor<2x2x8x4xf32>, tensor<5x1xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x8x4xf32>
    %60 = stablehlo.broadcast_in_dim %59, dims = [0, 1, 3, 4] : (tensor<2x2x8x4xf32>) -> tensor<2x2x2x8x4xf32>
    %61 = stablehlo.reshape %60 : (tensor<2x2x2x8x4xf32>) -> tensor<2x4x8x4xf32>
    %62 = stablehlo.transpose %61, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,4,8]{2,3,1,0}"} : (tensor<2x4x8x4xf32>) -> tensor<2x4x4x8xf32>
    %63 = stablehlo.multiply %62, %cst_3 : tensor<2x4x4x8xf32>
    %64 = stablehlo.reshape %63 : (tensor<2x4x4x8xf32>) -> tensor<8x4x8xf32>
    %65 = stablehlo.dot_general %39, %64, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x8xf32>) -> tensor<8x5x8xf32>
    %66 = stablehlo.reshape %65 : (tensor<8x5x8xf32>) -> tensor<2x4x5x8xf32>
    %67 = stablehlo.broadcast_in_dim %c_2, dims = [0, 1, 3] : (tensor<1x1x8xi64>) -> tensor<1x1x5x8xi64>
    %68 = stablehlo.broadcast_in_dim %c_1, dims = [0, 1, 2] : (tensor<1x1x5xi64>) -> tensor<1x1x5x8xi64>
    %69 = stablehlo.compare  LE, %67, %68 : (tensor<1x1x5x8xi64>, tensor<1x1x5x8xi64>) -> tensor<1x1x5x8xi1>
    %70 = stablehlo.reshape %69 : (tensor<1x1x5x8xi1>) -> tensor<1x5x8xi1>
    %71 = stablehlo.broadcast_in_dim %70, dims = [1, 2, 3] : (tensor<1x5x8xi1>) -> tensor<2x1x5x8xi1>
    %72 = stablehlo.select %71, %cst_0, %cst : tensor<2x1x5x8xi1>, tensor<2x1x5x8xf32>
    %73 = stablehlo.reshape %72 : (tensor<2x1x5x8xf32>) -> tensor<2x5x8xf32>
    %74 = stablehlo.broadcast_in_dim %73, dims = [0, 2, 3] : (tensor<2x5x8xf32>) -> tensor<2x4x5x8xf32>
    %75 = stablehlo.add %66, %74 : tensor<2x4x5x8xf32>
    %76 = stablehlo.reduce(%75 init: %cst_12) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x5x8xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %77 = stablehlo.broadcast_in_dim %76, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x8xf32>
    %78 = stablehlo.subtract %75, %77 : tensor<2x4x5x8xf32>
    %79 = stablehlo.exponential %78 : tensor<2x4x5x8xf32>
    %80 = stablehlo.reduce(%79 init: %cst_15) applies stablehlo.add across dimensions = [3] : (tensor<2x4x5x8xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %81 = stablehlo.broadcast_in_dim %80, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x8xf32>
    %82 = stablehlo.divide %79, %81 : tensor<2x4x5x8xf32>
    %83 = stablehlo.reshape %82 : (tensor<2x4x5x8xf32>) -> tensor<8x5x8xf32>
    %84 = stablehlo.transpose %arg8, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %85 = stablehlo.dot_general %16, %84, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %86 = stablehlo.reshape %85 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %87 = stablehlo.transpose %86, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %88 = "stablehlo.scatter"(%cst_6, %45, %87) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg25: tensor<f32>, %arg26: tensor<f32>):
      stablehlo.return %arg26 : tensor<f32>
    }) : (tensor<2x2x8x4xf32>, tensor<5x1xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x8x4xf32>
    %89 = stablehlo.broadcast_in_dim %88, dims = [0, 1, 3, 4] : (tensor<2x2x8x4xf32>) -> tensor<2x2x2x8x4xf32>
    %90 = stablehlo.reshape %89 : (tensor<2x2x2x8x4xf32>) -> tensor<8x8x4xf32>
    %91 = stablehlo.dot_general %83, %90, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x8xf32>, tensor<8x8x4xf32>) -> tensor<8x5x4xf32>
    %92 = stablehlo.reshape %91 : (tensor<8x5x4xf32>) -> tensor<2x4x5x4xf32>
    %93 = stablehlo.transpose %92, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,4,4]{3,1,2,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x5x4x4xf32>
    %94 = stablehlo.reshape %93 : (tensor<2x5x4x4xf32>) -> tensor<2x5x16xf32>
    %95 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %96 = stablehlo.broadcast_in_dim %95, dims = [1, 2] : (tensor<16x16xf32>) -> tensor<2x16x16xf32>
    %97 = stablehlo.dot_general %94, %96, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x16xf32>, tensor<2x16x16xf32>) -> tensor<2x5x16xf32>
    %98 = stablehlo.add %4, %97 : tensor<2x5x16xf32>
    %99 = stablehlo.broadcast_in_dim %arg16, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %100 = stablehlo.power %98, %cst_11 : tensor<2x5x16xf32>
    %101 = stablehlo.reduce(%100 init: %cst_15) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %102 = stablehlo.multiply %101, %cst_10 : tensor<2x5xf32>
    %103 = stablehlo.reshape %102 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %104 = stablehlo.add %103, %cst_9 : tensor<2x5x1xf32>
    %105 = stablehlo.rsqrt %104 : tensor<2x5x1xf32>
    %106 = stablehlo.reshape %105 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %107 = stablehlo.broadcast_in_dim %106, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %108 = stablehlo.multiply %98, %107 : tensor<2x5x16xf32>
    %109 = stablehlo.multiply %99, %108 : tensor<2x5x16xf32>
    %110 = stablehlo.reshape %109 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %111 = stablehlo.transpose %arg17, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %112 = stablehlo.dot_general %110, %111, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %113 = stablehlo.reshape %112 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %114 = stablehlo.logistic %113 : tensor<2x5x32xf32>
    %115 = stablehlo.multiply %113, %114 : tensor<2x5x32xf32>
    %116 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %117 = stablehlo.dot_general %110, %116, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %118 = stablehlo.reshape %117 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %119 = stablehlo.multiply %115, %118 : tensor<2x5x32xf32>
    %120 = stablehlo.reshape %119 : (tensor<2x5x32xf32>) -> tensor<10x32xf32>
    %121 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %122 = stablehlo.dot_general %120, %121, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x32xf32>, tensor<32x16xf32>) -> tensor<10x16xf32>
    %123 = stablehlo.reshape %122 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %124 = stablehlo.add %98, %123 : tensor<2x5x16xf32>
    %125 = stablehlo.broadcast_in_dim %arg18, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %126 = stablehlo.power %124, %cst_11 : tensor<2x5x16xf32>
    %127 = stablehlo.reduce(%126 init: %cst_15) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %128 = stablehlo.multiply %127, %cst_10 : tensor<2x5xf32>
    %129 = stablehlo.reshape %128 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %130 = stablehlo.add %129, %cst_9 : tensor<2x5x1xf32>
    %131 = stablehlo.rsqrt %130 : tensor<2x5x1xf32>
    %132 = stablehlo.reshape %131 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %133 = stablehlo.broadcast_in_dim %132, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %134 = stablehlo.multiply %124, %133 : tensor<2x5x16xf32>
    %135 = stablehlo.multiply %125, %134 : tensor<2x5x16xf32>
    %136 = stablehlo.reshape %135 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %137 = stablehlo.transpose %arg21, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %138 = stablehlo.dot_general %136, %137, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x16xf32>) -> tensor<10x16xf32>
    %139 = stablehlo.reshape %138 : (tensor<10x16xf32>) -> tensor<2x5x4x4xf32>
    %140 = stablehlo.transpose %139, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,5,4]{3,1,2,0}"} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
    %141 = stablehlo.multiply %140, %27 : tensor<2x4x5x4xf32>
    %142 = stablehlo.slice %140 [0:2, 0:4, 0:5, 2:4] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %143 = stablehlo.negate %142 : tensor<2x4x5x2xf32>
    %144 = stablehlo.slice %140 [0:2, 0:4, 0:5, 0:2] : (tensor<2x4x5x4xf32>) -> tensor<2x4x5x2xf32>
    %145 = stablehlo.concatenate %143, %144, dim = 3 : (tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>) -> tensor<2x4x5x4xf32>
    %146 = stablehlo.multiply %145, %35 : tensor<2x4x5x4xf32>
    %147 = stablehlo.add %141, %146 : tensor<2x4x5x4xf32>
    %148 = stablehlo.multiply %147, %cst_7 : tensor<2x4x5x4xf32>
    %149 = stablehlo.reshape %148 : (tensor<2x4x5x4xf32>) -> tensor<8x5x4xf32>
    %150 = stablehlo.broadcast_in_dim %arg19, dims = [] : (tensor<i64>) -> tensor<5xi64>
    %151 = stablehlo.add %150, %c_13 : tensor<5xi64>
    %152 = stablehlo.compare  LT, %151, %c_5 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
    %153 = stablehlo.add %151, %c_4 : tensor<5xi64>
    %154 = stablehlo.select %152, %153, %151 : tensor<5xi1>, tensor<5xi64>
    %155 = stablehlo.reshape %154 : (tensor<5xi64>) -> tensor<5x1xi64>
    %156 = stablehlo.transpose %arg20, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %157 = stablehlo.dot_general %136, %156, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %158 = stablehlo.reshape %157 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %159 = stablehlo.transpose %158, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %160 = stablehlo.multiply %159, %50 : tensor<2x2x5x4xf32>
    %161 = stablehlo.slice %159 [0:2, 0:2, 0:5, 2:4] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %162 = stablehlo.negate %161 : tensor<2x2x5x2xf32>
    %163 = stablehlo.slice %159 [0:2, 0:2, 0:5, 0:2] : (tensor<2x2x5x4xf32>) -> tensor<2x2x5x2xf32>
    %164 = stablehlo.concatenate %162, %163, dim = 3 : (tensor<2x2x5x2xf32>, tensor<2x2x5x2xf32>) -> tensor<2x2x5x4xf32>
    %165 = stablehlo.multiply %164, %56 : tensor<2x2x5x4xf32>
    %166 = stablehlo.add %160, %165 : tensor<2x2x5x4xf32>
    %167 = "stablehlo.scatter"(%cst_6, %155, %166) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg25: tensor<f32>, %arg26: tensor<f32>):
      stablehlo.return %arg26 : tensor<f32>
    }) : (tensor<2x2x8x4xf32>, tensor<5x1xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x8x4xf32>
    %168 = stablehlo.broadcast_in_dim %167, dims = [0, 1, 3, 4] : (tensor<2x2x8x4xf32>) -> tensor<2x2x2x8x4xf32>
    %169 = stablehlo.reshape %168 : (tensor<2x2x2x8x4xf32>) -> tensor<2x4x8x4xf32>
    %170 = stablehlo.transpose %169, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,4,8]{2,3,1,0}"} : (tensor<2x4x8x4xf32>) -> tensor<2x4x4x8xf32>
    %171 = stablehlo.multiply %170, %cst_3 : tensor<2x4x4x8xf32>
    %172 = stablehlo.reshape %171 : (tensor<2x4x4x8xf32>) -> tensor<8x4x8xf32>
    %173 = stablehlo.dot_general %149, %172, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x4xf32>, tensor<8x4x8xf32>) -> tensor<8x5x8xf32>
    %174 = stablehlo.reshape %173 : (tensor<8x5x8xf32>) -> tensor<2x4x5x8xf32>
    %175 = stablehlo.add %174, %74 : tensor<2x4x5x8xf32>
    %176 = stablehlo.reduce(%175 init: %cst_12) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x5x8xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %177 = stablehlo.broadcast_in_dim %176, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x8xf32>
    %178 = stablehlo.subtract %175, %177 : tensor<2x4x5x8xf32>
    %179 = stablehlo.exponential %178 : tensor<2x4x5x8xf32>
    %180 = stablehlo.reduce(%179 init: %cst_15) applies stablehlo.add across dimensions = [3] : (tensor<2x4x5x8xf32>, tensor<f32>) -> tensor<2x4x5xf32>
    %181 = stablehlo.broadcast_in_dim %180, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<2x4x5x8xf32>
    %182 = stablehlo.divide %179, %181 : tensor<2x4x5x8xf32>
    %183 = stablehlo.reshape %182 : (tensor<2x4x5x8xf32>) -> tensor<8x5x8xf32>
    %184 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %185 = stablehlo.dot_general %136, %184, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x8xf32>) -> tensor<10x8xf32>
    %186 = stablehlo.reshape %185 : (tensor<10x8xf32>) -> tensor<2x5x2x4xf32>
    %187 = stablehlo.transpose %186, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,5,4]{3,1,2,0}"} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
    %188 = "stablehlo.scatter"(%cst_6, %155, %187) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg25: tensor<f32>, %arg26: tensor<f32>):
      stablehlo.return %arg26 : tensor<f32>
    }) : (tensor<2x2x8x4xf32>, tensor<5x1xi64>, tensor<2x2x5x4xf32>) -> tensor<2x2x8x4xf32>
    %189 = stablehlo.broadcast_in_dim %188, dims = [0, 1, 3, 4] : (tensor<2x2x8x4xf32>) -> tensor<2x2x2x8x4xf32>
    %190 = stablehlo.reshape %189 : (tensor<2x2x2x8x4xf32>) -> tensor<8x8x4xf32>
    %191 = stablehlo.dot_general %183, %190, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x5x8xf32>, tensor<8x8x4xf32>) -> tensor<8x5x4xf32>
    %192 = stablehlo.reshape %191 : (tensor<8x5x4xf32>) -> tensor<2x4x5x4xf32>
    %193 = stablehlo.transpose %192, dims = [0, 2, 1, 3] {result_layout = dense<[3, 1, 2, 0]> : tensor<4xindex>, xla_shape = "f32[2,5,4,4]{3,1,2,0}"} : (tensor<2x4x5x4xf32>) -> tensor<2x5x4x4xf32>
    %194 = stablehlo.reshape %193 : (tensor<2x5x4x4xf32>) -> tensor<2x5x16xf32>
    %195 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %196 = stablehlo.broadcast_in_dim %195, dims = [1, 2] : (tensor<16x16xf32>) -> tensor<2x16x16xf32>
    %197 = stablehlo.dot_general %194, %196, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x16xf32>, tensor<2x16x16xf32>) -> tensor<2x5x16xf32>
    %198 = stablehlo.add %124, %197 : tensor<2x5x16xf32>
    %199 = stablehlo.broadcast_in_dim %arg22, dims = [2] : (tensor<16xf32>) -> tensor<2x5x16xf32>
    %200 = stablehlo.power %198, %cst_11 : tensor<2x5x16xf32>
    %201 = stablehlo.reduce(%200 init: %cst_15) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %202 = stablehlo.multiply %201, %cst_10 : tensor<2x5xf32>
    %203 = stablehlo.reshape %202 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %204 = stablehlo.add %203, %cst_9 : tensor<2x5x1xf32>
    %205 = stablehlo.rsqrt %204 : tensor<2x5x1xf32>
    %206 = stablehlo.reshape %205 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %207 = stablehlo.broadcast_in_dim %206, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %208 = stablehlo.multiply %198, %207 : tensor<2x5x16xf32>
    %209 = stablehlo.multiply %199, %208 : tensor<2x5x16xf32>
    %210 = stablehlo.reshape %209 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %211 = stablehlo.transpose %arg23, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %212 = stablehlo.dot_general %210, %211, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %213 = stablehlo.reshape %212 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %214 = stablehlo.logistic %213 : tensor<2x5x32xf32>
    %215 = stablehlo.multiply %213, %214 : tensor<2x5x32xf32>
    %216 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %217 = stablehlo.dot_general %210, %216, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %218 = stablehlo.reshape %217 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %219 = stablehlo.multiply %215, %218 : tensor<2x5x32xf32>
    %220 = stablehlo.reshape %219 : (tensor<2x5x32xf32>) -> tensor<10x32xf32>
    %221 = stablehlo.transpose %arg1, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %222 = stablehlo.dot_general %220, %221, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x32xf32>, tensor<32x16xf32>) -> tensor<10x16xf32>
    %223 = stablehlo.reshape %222 : (tensor<10x16xf32>) -> tensor<2x5x16xf32>
    %224 = stablehlo.add %198, %223 : tensor<2x5x16xf32>
    %225 = stablehlo.power %224, %cst_11 : tensor<2x5x16xf32>
    %226 = stablehlo.reduce(%225 init: %cst_15) applies stablehlo.add across dimensions = [2] : (tensor<2x5x16xf32>, tensor<f32>) -> tensor<2x5xf32>
    %227 = stablehlo.multiply %226, %cst_10 : tensor<2x5xf32>
    %228 = stablehlo.reshape %227 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %229 = stablehlo.add %228, %cst_9 : tensor<2x5x1xf32>
    %230 = stablehlo.rsqrt %229 : tensor<2x5x1xf32>
    %231 = stablehlo.reshape %230 : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
    %232 = stablehlo.broadcast_in_dim %231, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x16xf32>
    %233 = stablehlo.multiply %224, %232 : tensor<2x5x16xf32>
    %234 = stablehlo.multiply %0, %233 : tensor<2x5x16xf32>
    %235 = stablehlo.reshape %234 : (tensor<2x5x16xf32>) -> tensor<10x16xf32>
    %236 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %237 = stablehlo.dot_general %235, %236, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x16xf32>, tensor<16x32xf32>) -> tensor<10x32xf32>
    %238 = stablehlo.reshape %237 : (tensor<10x32xf32>) -> tensor<2x5x32xf32>
    %239 = stablehlo.slice %238 [0:2, 4:5, 0:32] : (tensor<2x5x32xf32>) -> tensor<2x1x32xf32>
    %240 = stablehlo.reshape %239 : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %241 = stablehlo.iota dim = 0 : tensor<32xi32>
    %242 = stablehlo.broadcast_in_dim %241, dims = [1] : (tensor<32xi32>) -> tensor<2x32xi32>
    %243:2 = stablehlo.reduce(%240 init: %cst_12), (%242 init: %c_14) across dimensions = [1] : (tensor<2x32xf32>, tensor<2x32xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
     reducer(%arg25: tensor<f32>, %arg27: tensor<f32>) (%arg26: tensor<i32>, %arg28: tensor<i32>)  {
      %247 = stablehlo.compare  GE, %arg25, %arg27 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %248 = stablehlo.select %247, %arg25, %arg27 : tensor<i1>, tensor<f32>
      %249 = stablehlo.compare  EQ, %arg25, %arg27 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %250 = stablehlo.minimum %arg26, %arg28 : tensor<i32>
      %251 = stablehlo.select %247, %arg26, %arg28 : tensor<i1>, tensor<i32>
      %252 = stablehlo.select %249, %250, %251 : tensor<i1>, tensor<i32>
      stablehlo.return %248, %252 : tensor<f32>, tensor<i32>
    }
    %244 = stablehlo.convert %243#1 : (tensor<2xi32>) -> tensor<2xi64>
    %245 = stablehlo.add %arg12, %c : tensor<i64>
    %246 = stablehlo.add %arg19, %c : tensor<i64>
    return %240, %244, %59, %88, %167, %188, %245, %246 : tensor<2x32xf32>, tensor<2xi64>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<i64>, tensor<i64>
  }
}
