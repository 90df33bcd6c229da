module @IrToHlo.632 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<32x16xf32>, %arg1: tensor<f32>, %arg2: tensor<16x32xf32>, %arg3: tensor<32x16xf32>, %arg4: tensor<16x16xf32>, %arg5: tensor<8x16xf32>, %arg6: tensor<16x32xf32>, %arg7: tensor<32x16xf32>, %arg8: tensor<16x16xf32>, %arg9: tensor<8x16xf32>, %arg10: tensor<2xi64>, %arg11: tensor<32x16xf32>, %arg12: tensor<16xf32>, %arg13: tensor<i64>, %arg14: tensor<2x2x8x4xf32>, %arg15: tensor<f32>, %arg16: tensor<f32>, %arg17: tensor<2xf32>, %arg18: tensor<8x16xf32>, %arg19: tensor<2x2x8x4xf32>, %arg20: tensor<16x16xf32>, %arg21: tensor<16xf32>, %arg22: tensor<32x16xf32>, %arg23: tensor<16xf32>, %arg24: tensor<i64>, %arg25: tensor<2x2x8x4xf32>, %arg26: tensor<8x16xf32>, %arg27: tensor<2x2x8x4xf32>, %arg28: tensor<16x16xf32>, %arg29: tensor<16xf32>, %arg30: tensor<32x16xf32>, %arg31: tensor<16xf32>) -> (tensor<2x32xf32>, tensor<2xi64>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<i64>, tensor<i64>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x2x2x8xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<2x2x2x8xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<2x1x1x8xf32>
    %c_2 = stablehlo.constant dense<[[[[0, 1, 2, 3, 4, 5, 6, 7]]]]> : tensor<1x1x1x8xi64>
    %cst_3 = stablehlo.constant dense<6.250000e-02> : tensor<2x1xf32>
    %cst_4 = stablehlo.constant dense<2.000000e+00> : tensor<2x1x16xf32>
    %c_5 = stablehlo.constant dense<false> : tensor<i1>
    %c_6 = stablehlo.constant dense<true> : tensor<i1>
    %cst_7 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg31, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %1 = stablehlo.convert %arg10 : (tensor<2xi64>) -> tensor<2xui32>
    %2 = "stablehlo.gather"(%arg11, %1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<32x16xf32>, tensor<2xui32>) -> tensor<2x16xf32>
    %3 = stablehlo.reshape %2 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %4 = stablehlo.broadcast_in_dim %arg12, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %5 = stablehlo.power %3, %cst_4 : tensor<2x1x16xf32>
    %6 = stablehlo.reduce(%5 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %7 = stablehlo.multiply %6, %cst_3 : tensor<2x1xf32>
    %8 = stablehlo.reshape %7 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %9 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x1x1xf32>
    %10 = stablehlo.add %8, %9 : tensor<2x1x1xf32>
    %11 = stablehlo.rsqrt %10 : tensor<2x1x1xf32>
    %12 = stablehlo.reshape %11 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %14 = stablehlo.multiply %3, %13 : tensor<2x1x16xf32>
    %15 = stablehlo.multiply %4, %14 : tensor<2x1x16xf32>
    %16 = stablehlo.reshape %15 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %17 = stablehlo.transpose %arg20, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %18 = stablehlo.dot_general %16, %17, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %19 = stablehlo.reshape %18 : (tensor<2x16xf32>) -> tensor<2x4x1x4xf32>
    %20 = stablehlo.reshape %arg13 : (tensor<i64>) -> tensor<1x1x1xi64>
    %21 = stablehlo.convert %20 : (tensor<1x1x1xi64>) -> tensor<1x1x1xf32>
    %22 = stablehlo.reshape %21 : (tensor<1x1x1xf32>) -> tensor<1x1xf32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x2xf32>
    %24 = stablehlo.reshape %arg17 : (tensor<2xf32>) -> tensor<1x1x2xf32>
    %25 = stablehlo.multiply %23, %24 : tensor<1x1x2xf32>
    %26 = stablehlo.concatenate %25, %25, dim = 2 : (tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<1x1x4xf32>
    %27 = stablehlo.cosine %26 : tensor<1x1x4xf32>
    %28 = stablehlo.reshape %27 : (tensor<1x1x4xf32>) -> tensor<1x4xf32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x4x1x4xf32>
    %30 = stablehlo.multiply %19, %29 : tensor<2x4x1x4xf32>
    %31 = stablehlo.slice %19 [0:2, 0:4, 0:1, 2:4] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %32 = stablehlo.negate %31 : tensor<2x4x1x2xf32>
    %33 = stablehlo.slice %19 [0:2, 0:4, 0:1, 0:2] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %34 = stablehlo.concatenate %32, %33, dim = 3 : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> tensor<2x4x1x4xf32>
    %35 = stablehlo.sine %26 : tensor<1x1x4xf32>
    %36 = stablehlo.reshape %35 : (tensor<1x1x4xf32>) -> tensor<1x4xf32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x4x1x4xf32>
    %38 = stablehlo.multiply %34, %37 : tensor<2x4x1x4xf32>
    %39 = stablehlo.add %30, %38 : tensor<2x4x1x4xf32>
    %40 = stablehlo.reshape %39 : (tensor<2x4x1x4xf32>) -> tensor<2x2x2x4xf32>
    %41 = stablehlo.broadcast_in_dim %arg16, dims = [] : (tensor<f32>) -> tensor<2x2x2x4xf32>
    %42 = stablehlo.multiply %40, %41 : tensor<2x2x2x4xf32>
    %43 = stablehlo.reshape %42 : (tensor<2x2x2x4xf32>) -> tensor<4x2x4xf32>
    %44 = stablehlo.reshape %arg13 : (tensor<i64>) -> tensor<1xi64>
    %45 = stablehlo.transpose %arg18, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %46 = stablehlo.dot_general %16, %45, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %47 = stablehlo.reshape %46 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %48 = stablehlo.broadcast_in_dim %28, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x2x1x4xf32>
    %49 = stablehlo.multiply %47, %48 : tensor<2x2x1x4xf32>
    %50 = stablehlo.slice %47 [0:2, 0:2, 0:1, 2:4] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %51 = stablehlo.negate %50 : tensor<2x2x1x2xf32>
    %52 = stablehlo.slice %47 [0:2, 0:2, 0:1, 0:2] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %53 = stablehlo.concatenate %51, %52, dim = 3 : (tensor<2x2x1x2xf32>, tensor<2x2x1x2xf32>) -> tensor<2x2x1x4xf32>
    %54 = stablehlo.broadcast_in_dim %36, dims = [2, 3] : (tensor<1x4xf32>) -> tensor<2x2x1x4xf32>
    %55 = stablehlo.multiply %53, %54 : tensor<2x2x1x4xf32>
    %56 = stablehlo.add %49, %55 : tensor<2x2x1x4xf32>
    %57 = "stablehlo.scatter"(%arg19, %44, %56) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x8x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x8x4xf32>
    %58 = stablehlo.transpose %57, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,4,8]{2,3,1,0}"} : (tensor<2x2x8x4xf32>) -> tensor<2x2x4x8xf32>
    %59 = stablehlo.broadcast_in_dim %arg16, dims = [] : (tensor<f32>) -> tensor<2x2x4x8xf32>
    %60 = stablehlo.multiply %58, %59 : tensor<2x2x4x8xf32>
    %61 = stablehlo.reshape %60 : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
    %62 = stablehlo.dot_general %43, %61, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x4xf32>, tensor<4x4x8xf32>) -> tensor<4x2x8xf32>
    %63 = stablehlo.reshape %62 : (tensor<4x2x8xf32>) -> tensor<2x2x2x8xf32>
    %64 = stablehlo.broadcast_in_dim %20, dims = [0, 1, 2] : (tensor<1x1x1xi64>) -> tensor<1x1x1x8xi64>
    %65 = stablehlo.compare  LE, %c_2, %64 : (tensor<1x1x1x8xi64>, tensor<1x1x1x8xi64>) -> tensor<1x1x1x8xi1>
    %66 = stablehlo.reshape %65 : (tensor<1x1x1x8xi1>) -> tensor<1x1x8xi1>
    %67 = stablehlo.broadcast_in_dim %66, dims = [1, 2, 3] : (tensor<1x1x8xi1>) -> tensor<2x1x1x8xi1>
    %68 = stablehlo.reshape %arg15 : (tensor<f32>) -> tensor<1x1xf32>
    %69 = stablehlo.broadcast_in_dim %68, dims = [1, 2] : (tensor<1x1xf32>) -> tensor<2x1x1x8xf32>
    %70 = stablehlo.select %67, %cst_1, %69 : tensor<2x1x1x8xi1>, tensor<2x1x1x8xf32>
    %71 = stablehlo.reshape %70 : (tensor<2x1x1x8xf32>) -> tensor<2x8xf32>
    %72 = stablehlo.broadcast_in_dim %71, dims = [0, 3] : (tensor<2x8xf32>) -> tensor<2x2x2x8xf32>
    %73 = stablehlo.add %63, %72 : tensor<2x2x2x8xf32>
    %74 = stablehlo.compare  EQ, %73, %cst_0 : (tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xi1>
    %75 = stablehlo.reduce(%74 init: %c_6) across dimensions = [3] : (tensor<2x2x2x8xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg32: tensor<i1>, %arg33: tensor<i1>)  {
      %234 = stablehlo.and %arg32, %arg33 : tensor<i1>
      %235 = stablehlo.select %234, %c_6, %c_5 : tensor<i1>, tensor<i1>
      stablehlo.return %235 : tensor<i1>
    }
    %76 = stablehlo.broadcast_in_dim %75, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x8xi1>
    %77 = stablehlo.reduce(%73 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x8xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %78 = stablehlo.broadcast_in_dim %77, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x8xf32>
    %79 = stablehlo.subtract %73, %78 : tensor<2x2x2x8xf32>
    %80 = stablehlo.exponential %79 : tensor<2x2x2x8xf32>
    %81 = stablehlo.reduce(%80 init: %cst_9) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x8xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %82 = stablehlo.broadcast_in_dim %81, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x8xf32>
    %83 = stablehlo.divide %80, %82 : tensor<2x2x2x8xf32>
    %84 = stablehlo.select %76, %cst, %83 : tensor<2x2x2x8xi1>, tensor<2x2x2x8xf32>
    %85 = stablehlo.reshape %84 : (tensor<2x2x2x8xf32>) -> tensor<4x2x8xf32>
    %86 = stablehlo.transpose %arg9, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %87 = stablehlo.dot_general %16, %86, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %88 = stablehlo.reshape %87 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %89 = "stablehlo.scatter"(%arg14, %44, %88) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x8x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x8x4xf32>
    %90 = stablehlo.reshape %89 : (tensor<2x2x8x4xf32>) -> tensor<4x8x4xf32>
    %91 = stablehlo.dot_general %85, %90, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x8xf32>, tensor<4x8x4xf32>) -> tensor<4x2x4xf32>
    %92 = stablehlo.reshape %91 : (tensor<4x2x4xf32>) -> tensor<2x16xf32>
    %93 = stablehlo.transpose %arg8, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %94 = stablehlo.dot_general %92, %93, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %95 = stablehlo.reshape %94 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %96 = stablehlo.add %3, %95 : tensor<2x1x16xf32>
    %97 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %98 = stablehlo.power %96, %cst_4 : tensor<2x1x16xf32>
    %99 = stablehlo.reduce(%98 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %100 = stablehlo.multiply %99, %cst_3 : tensor<2x1xf32>
    %101 = stablehlo.reshape %100 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %102 = stablehlo.add %101, %9 : tensor<2x1x1xf32>
    %103 = stablehlo.rsqrt %102 : tensor<2x1x1xf32>
    %104 = stablehlo.reshape %103 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %105 = stablehlo.broadcast_in_dim %104, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %106 = stablehlo.multiply %96, %105 : tensor<2x1x16xf32>
    %107 = stablehlo.multiply %97, %106 : tensor<2x1x16xf32>
    %108 = stablehlo.reshape %107 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %109 = stablehlo.transpose %arg22, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %110 = stablehlo.dot_general %108, %109, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %111 = stablehlo.reshape %110 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %112 = stablehlo.logistic %111 : tensor<2x1x32xf32>
    %113 = stablehlo.multiply %111, %112 : tensor<2x1x32xf32>
    %114 = stablehlo.transpose %arg7, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %115 = stablehlo.dot_general %108, %114, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %116 = stablehlo.reshape %115 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %117 = stablehlo.multiply %113, %116 : tensor<2x1x32xf32>
    %118 = stablehlo.reshape %117 : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %119 = stablehlo.transpose %arg6, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %120 = stablehlo.dot_general %118, %119, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x32xf32>, tensor<32x16xf32>) -> tensor<2x16xf32>
    %121 = stablehlo.reshape %120 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %122 = stablehlo.add %96, %121 : tensor<2x1x16xf32>
    %123 = stablehlo.broadcast_in_dim %arg23, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %124 = stablehlo.power %122, %cst_4 : tensor<2x1x16xf32>
    %125 = stablehlo.reduce(%124 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %126 = stablehlo.multiply %125, %cst_3 : tensor<2x1xf32>
    %127 = stablehlo.reshape %126 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %128 = stablehlo.add %127, %9 : tensor<2x1x1xf32>
    %129 = stablehlo.rsqrt %128 : tensor<2x1x1xf32>
    %130 = stablehlo.reshape %129 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %131 = stablehlo.broadcast_in_dim %130, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %132 = stablehlo.multiply %122, %131 : tensor<2x1x16xf32>
    %133 = stablehlo.multiply %123, %132 : tensor<2x1x16xf32>
    %134 = stablehlo.reshape %133 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %135 = stablehlo.transpose %arg28, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %136 = stablehlo.dot_general %134, %135, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %137 = stablehlo.reshape %136 : (tensor<2x16xf32>) -> tensor<2x4x1x4xf32>
    %138 = stablehlo.multiply %137, %29 : tensor<2x4x1x4xf32>
    %139 = stablehlo.slice %137 [0:2, 0:4, 0:1, 2:4] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %140 = stablehlo.negate %139 : tensor<2x4x1x2xf32>
    %141 = stablehlo.slice %137 [0:2, 0:4, 0:1, 0:2] : (tensor<2x4x1x4xf32>) -> tensor<2x4x1x2xf32>
    %142 = stablehlo.concatenate %140, %141, dim = 3 : (tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> tensor<2x4x1x4xf32>
    %143 = stablehlo.multiply %142, %37 : tensor<2x4x1x4xf32>
    %144 = stablehlo.add %138, %143 : tensor<2x4x1x4xf32>
    %145 = stablehlo.reshape %144 : (tensor<2x4x1x4xf32>) -> tensor<2x2x2x4xf32>
    %146 = stablehlo.multiply %145, %41 : tensor<2x2x2x4xf32>
    %147 = stablehlo.reshape %146 : (tensor<2x2x2x4xf32>) -> tensor<4x2x4xf32>
    %148 = stablehlo.reshape %arg24 : (tensor<i64>) -> tensor<1xi64>
    %149 = stablehlo.transpose %arg26, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %150 = stablehlo.dot_general %134, %149, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %151 = stablehlo.reshape %150 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %152 = stablehlo.multiply %151, %48 : tensor<2x2x1x4xf32>
    %153 = stablehlo.slice %151 [0:2, 0:2, 0:1, 2:4] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %154 = stablehlo.negate %153 : tensor<2x2x1x2xf32>
    %155 = stablehlo.slice %151 [0:2, 0:2, 0:1, 0:2] : (tensor<2x2x1x4xf32>) -> tensor<2x2x1x2xf32>
    %156 = stablehlo.concatenate %154, %155, dim = 3 : (tensor<2x2x1x2xf32>, tensor<2x2x1x2xf32>) -> tensor<2x2x1x4xf32>
    %157 = stablehlo.multiply %156, %54 : tensor<2x2x1x4xf32>
    %158 = stablehlo.add %152, %157 : tensor<2x2x1x4xf32>
    %159 = "stablehlo.scatter"(%arg27, %148, %158) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x8x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x8x4xf32>
    %160 = stablehlo.transpose %159, dims = [0, 1, 3, 2] {result_layout = dense<[2, 3, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,2,4,8]{2,3,1,0}"} : (tensor<2x2x8x4xf32>) -> tensor<2x2x4x8xf32>
    %161 = stablehlo.multiply %160, %59 : tensor<2x2x4x8xf32>
    %162 = stablehlo.reshape %161 : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
    %163 = stablehlo.dot_general %147, %162, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x4xf32>, tensor<4x4x8xf32>) -> tensor<4x2x8xf32>
    %164 = stablehlo.reshape %163 : (tensor<4x2x8xf32>) -> tensor<2x2x2x8xf32>
    %165 = stablehlo.add %164, %72 : tensor<2x2x2x8xf32>
    %166 = stablehlo.compare  EQ, %165, %cst_0 : (tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xi1>
    %167 = stablehlo.reduce(%166 init: %c_6) across dimensions = [3] : (tensor<2x2x2x8xi1>, tensor<i1>) -> tensor<2x2x2xi1>
     reducer(%arg32: tensor<i1>, %arg33: tensor<i1>)  {
      %234 = stablehlo.and %arg32, %arg33 : tensor<i1>
      %235 = stablehlo.select %234, %c_6, %c_5 : tensor<i1>, tensor<i1>
      stablehlo.return %235 : tensor<i1>
    }
    %168 = stablehlo.broadcast_in_dim %167, dims = [0, 1, 2] : (tensor<2x2x2xi1>) -> tensor<2x2x2x8xi1>
    %169 = stablehlo.reduce(%165 init: %cst_7) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x2x8xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %170 = stablehlo.broadcast_in_dim %169, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x8xf32>
    %171 = stablehlo.subtract %165, %170 : tensor<2x2x2x8xf32>
    %172 = stablehlo.exponential %171 : tensor<2x2x2x8xf32>
    %173 = stablehlo.reduce(%172 init: %cst_9) applies stablehlo.add across dimensions = [3] : (tensor<2x2x2x8xf32>, tensor<f32>) -> tensor<2x2x2xf32>
    %174 = stablehlo.broadcast_in_dim %173, dims = [0, 1, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2x8xf32>
    %175 = stablehlo.divide %172, %174 : tensor<2x2x2x8xf32>
    %176 = stablehlo.select %168, %cst, %175 : tensor<2x2x2x8xi1>, tensor<2x2x2x8xf32>
    %177 = stablehlo.reshape %176 : (tensor<2x2x2x8xf32>) -> tensor<4x2x8xf32>
    %178 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %179 = stablehlo.dot_general %134, %178, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %180 = stablehlo.reshape %179 : (tensor<2x8xf32>) -> tensor<2x2x1x4xf32>
    %181 = "stablehlo.scatter"(%arg25, %148, %180) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg32: tensor<f32>, %arg33: tensor<f32>):
      stablehlo.return %arg33 : tensor<f32>
    }) : (tensor<2x2x8x4xf32>, tensor<1xi64>, tensor<2x2x1x4xf32>) -> tensor<2x2x8x4xf32>
    %182 = stablehlo.reshape %181 : (tensor<2x2x8x4xf32>) -> tensor<4x8x4xf32>
    %183 = stablehlo.dot_general %177, %182, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x2x8xf32>, tensor<4x8x4xf32>) -> tensor<4x2x4xf32>
    %184 = stablehlo.reshape %183 : (tensor<4x2x4xf32>) -> tensor<2x16xf32>
    %185 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,16]{0,1}"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %186 = stablehlo.dot_general %184, %185, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %187 = stablehlo.reshape %186 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %188 = stablehlo.add %122, %187 : tensor<2x1x16xf32>
    %189 = stablehlo.broadcast_in_dim %arg29, dims = [2] : (tensor<16xf32>) -> tensor<2x1x16xf32>
    %190 = stablehlo.power %188, %cst_4 : tensor<2x1x16xf32>
    %191 = stablehlo.reduce(%190 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %192 = stablehlo.multiply %191, %cst_3 : tensor<2x1xf32>
    %193 = stablehlo.reshape %192 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %194 = stablehlo.add %193, %9 : tensor<2x1x1xf32>
    %195 = stablehlo.rsqrt %194 : tensor<2x1x1xf32>
    %196 = stablehlo.reshape %195 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %197 = stablehlo.broadcast_in_dim %196, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %198 = stablehlo.multiply %188, %197 : tensor<2x1x16xf32>
    %199 = stablehlo.multiply %189, %198 : tensor<2x1x16xf32>
    %200 = stablehlo.reshape %199 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %201 = stablehlo.transpose %arg30, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %202 = stablehlo.dot_general %200, %201, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %203 = stablehlo.reshape %202 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %204 = stablehlo.logistic %203 : tensor<2x1x32xf32>
    %205 = stablehlo.multiply %203, %204 : tensor<2x1x32xf32>
    %206 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %207 = stablehlo.dot_general %200, %206, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %208 = stablehlo.reshape %207 : (tensor<2x32xf32>) -> tensor<2x1x32xf32>
    %209 = stablehlo.multiply %205, %208 : tensor<2x1x32xf32>
    %210 = stablehlo.reshape %209 : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %211 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[32,16]{0,1}"} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %212 = stablehlo.dot_general %210, %211, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x32xf32>, tensor<32x16xf32>) -> tensor<2x16xf32>
    %213 = stablehlo.reshape %212 : (tensor<2x16xf32>) -> tensor<2x1x16xf32>
    %214 = stablehlo.add %188, %213 : tensor<2x1x16xf32>
    %215 = stablehlo.power %214, %cst_4 : tensor<2x1x16xf32>
    %216 = stablehlo.reduce(%215 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1xf32>
    %217 = stablehlo.multiply %216, %cst_3 : tensor<2x1xf32>
    %218 = stablehlo.reshape %217 : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %219 = stablehlo.add %218, %9 : tensor<2x1x1xf32>
    %220 = stablehlo.rsqrt %219 : tensor<2x1x1xf32>
    %221 = stablehlo.reshape %220 : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
    %222 = stablehlo.broadcast_in_dim %221, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x16xf32>
    %223 = stablehlo.multiply %214, %222 : tensor<2x1x16xf32>
    %224 = stablehlo.multiply %0, %223 : tensor<2x1x16xf32>
    %225 = stablehlo.reshape %224 : (tensor<2x1x16xf32>) -> tensor<2x16xf32>
    %226 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,32]{0,1}"} : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %227 = stablehlo.dot_general %225, %226, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
    %228 = stablehlo.iota dim = 0 : tensor<32xi32>
    %229 = stablehlo.broadcast_in_dim %228, dims = [1] : (tensor<32xi32>) -> tensor<2x32xi32>
    %230:2 = stablehlo.reduce(%227 init: %cst_7), (%229 init: %c_8) across dimensions = [1] : (tensor<2x32xf32>, tensor<2x32xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
     reducer(%arg32: tensor<f32>, %arg34: tensor<f32>) (%arg33: tensor<i32>, %arg35: tensor<i32>)  {
      %234 = stablehlo.compare  GE, %arg32, %arg34 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %235 = stablehlo.select %234, %arg32, %arg34 : tensor<i1>, tensor<f32>
      %236 = stablehlo.compare  EQ, %arg32, %arg34 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %237 = stablehlo.minimum %arg33, %arg35 : tensor<i32>
      %238 = stablehlo.select %234, %arg33, %arg35 : tensor<i1>, tensor<i32>
      %239 = stablehlo.select %236, %237, %238 : tensor<i1>, tensor<i32>
      stablehlo.return %235, %239 : tensor<f32>, tensor<i32>
    }
    %231 = stablehlo.convert %230#1 : (tensor<2xi32>) -> tensor<2xi64>
    %232 = stablehlo.add %arg13, %c : tensor<i64>
    %233 = stablehlo.add %arg24, %c : tensor<i64>
    return %227, %231, %57, %89, %159, %181, %232, %233 : tensor<2x32xf32>, tensor<2xi64>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<i64>, tensor<i64>
  }
}
