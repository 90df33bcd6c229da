module @IrToHlo.75 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<4x3xi64>, %arg1: tensor<4x6xf32>, %arg2: tensor<3xi64>, %arg3: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x3xf32>, tensor<4x3xi64>, tensor<4x6xf32>, tensor<4x6xi64>, tensor<4x6xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.iota dim = 0 : tensor<4xui32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<4xui32>) -> tensor<4x3x1xui32>
    %2 = stablehlo.convert %arg0 : (tensor<4x3xi64>) -> tensor<4x3xui32>
    %3 = stablehlo.reshape %2 : (tensor<4x3xui32>) -> tensor<4x3x1xui32>
    %4 = stablehlo.concatenate %1, %3, dim = 2 : (tensor<4x3x1xui32>, tensor<4x3x1xui32>) -> tensor<4x3x2xui32>
    %5 = "stablehlo.gather"(%arg1, %4) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<4x6xf32>, tensor<4x3x2xui32>) -> tensor<4x3xf32>
    %6 = stablehlo.convert %arg2 : (tensor<3xi64>) -> tensor<3xui32>
    %7 = "stablehlo.gather"(%arg1, %6) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 6>}> : (tensor<4x6xf32>, tensor<3xui32>) -> tensor<3x6xf32>
    %8 = stablehlo.iota dim = 0 : tensor<4xi64>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0] : (tensor<4xi64>) -> tensor<4x3x1xi64>
    %10 = stablehlo.reshape %arg0 : (tensor<4x3xi64>) -> tensor<4x3x1xi64>
    %11 = stablehlo.concatenate %9, %10, dim = 2 : (tensor<4x3x1xi64>, tensor<4x3x1xi64>) -> tensor<4x3x2xi64>
    %12 = "stablehlo.scatter"(%arg1, %11, %arg3) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %27 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %27 : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<4x3x2xi64>, tensor<4x3xf32>) -> tensor<4x6xf32>
    %13 = stablehlo.concatenate %arg3, %arg3, dim = 1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
    %14 = stablehlo.slice %13 [0:3, 0:6] : (tensor<4x6xf32>) -> tensor<3x6xf32>
    %15 = "stablehlo.scatter"(%arg1, %arg2, %14) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %27 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %27 : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<3xi64>, tensor<3x6xf32>) -> tensor<4x6xf32>
    %16 = stablehlo.iota dim = 0 : tensor<6xi32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [1] : (tensor<6xi32>) -> tensor<4x6xi32>
    %18:2 = "stablehlo.sort"(%arg1, %17) <{dimension = 1 : i64, is_stable = false}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>, %arg6: tensor<i32>, %arg7: tensor<i32>):
      %27 = stablehlo.compare  GT, %arg4, %arg5,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %27 : tensor<i1>
    }) : (tensor<4x6xf32>, tensor<4x6xi32>) -> (tensor<4x6xf32>, tensor<4x6xi32>)
    %19 = stablehlo.slice %18#0 [0:4, 0:3] : (tensor<4x6xf32>) -> tensor<4x3xf32>
    %20 = stablehlo.slice %18#1 [0:4, 0:3] : (tensor<4x6xi32>) -> tensor<4x3xi32>
    %21 = stablehlo.convert %20 : (tensor<4x3xi32>) -> tensor<4x3xi64>
    %22 = stablehlo.iota dim = 0 : tensor<4xi32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [0] : (tensor<4xi32>) -> tensor<4x6xi32>
    %24:2 = "stablehlo.sort"(%arg1, %23) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>, %arg6: tensor<i32>, %arg7: tensor<i32>):
      %27 = stablehlo.compare  GT, %arg4, %arg5,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %27 : tensor<i1>
    }) : (tensor<4x6xf32>, tensor<4x6xi32>) -> (tensor<4x6xf32>, tensor<4x6xi32>)
    %25 = stablehlo.convert %24#1 : (tensor<4x6xi32>) -> tensor<4x6xi64>
    %26 = "stablehlo.reduce_window"(%arg1, %cst) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [5, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 6>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %27 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %27 : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
    return %5, %7, %12, %15, %19, %21, %24#0, %25, %26 : tensor<4x3xf32>, tensor<3x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x3xf32>, tensor<4x3xi64>, tensor<4x6xf32>, tensor<4x6xi64>, tensor<4x6xf32>
  }
}
