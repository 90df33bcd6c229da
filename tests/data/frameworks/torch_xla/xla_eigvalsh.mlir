module @IrToHlo.32 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<4x4xf32>, %arg1: tensor<f32>, %arg2: tensor<2x4x4xf32>) -> tensor<2x4xf32> {
    %0 = stablehlo.transpose %arg2, dims = [0, 2, 1] {result_layout = dense<[1, 2, 0]> : tensor<3xindex>, xla_shape = "f32[2,4,4]{1,2,0}"} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %1 = stablehlo.dot_general %arg2, %0, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %2 = stablehlo.iota dim = 0 : tensor<4xui32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<4xui32>) -> tensor<4x4xui32>
    %4 = stablehlo.broadcast_in_dim %2, dims = [1] : (tensor<4xui32>) -> tensor<4x4xui32>
    %5 = stablehlo.compare  EQ, %3, %4 : (tensor<4x4xui32>, tensor<4x4xui32>) -> tensor<4x4xi1>
    %6 = stablehlo.convert %5 : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %7 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %8 = stablehlo.multiply %6, %7 : tensor<4x4xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<2x4x4xf32>
    %10 = stablehlo.add %1, %9 : tensor<2x4x4xf32>
    %11 = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[4,4]{0,1}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %12 = stablehlo.multiply %arg0, %11 : tensor<4x4xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<2x4x4xf32>
    %14 = stablehlo.add %10, %13 : tensor<2x4x4xf32>
    %15 = stablehlo.custom_call @Eigh(%14) {backend_config = "1,1,100,0.000001", xla_shape = "(f32[2,4,4]{2,1,0}, f32[2,4]{1,0})"} : (tensor<2x4x4xf32>) -> tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>
    %16 = stablehlo.get_tuple_element %15[1] : (tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4xf32>
    return %16 : tensor<2x4xf32>
  }
}
