module @jit_gelu_layer attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<4x5xf32>, %arg3: tensor<5xf32>, %arg4: tensor<5x2xf32>) -> (tensor<8xf32> {jax.result_info = "result[0]"}, tensor<3x2xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %1 = stablehlo.multiply %0, %arg0 : tensor<8xf32>
    %2 = stablehlo.negate %arg0 : tensor<8xf32>
    %cst_0 = stablehlo.constant dense<0.707106769> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %4 = stablehlo.multiply %2, %3 : tensor<8xf32>
    %5 = chlo.erfc %4 : tensor<8xf32> -> tensor<8xf32>
    %6 = stablehlo.multiply %1, %5 : tensor<8xf32>
    %7 = stablehlo.dot_general %arg1, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
    %8 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<5xf32>) -> tensor<1x5xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<3x5xf32>
    %10 = stablehlo.add %7, %9 : tensor<3x5xf32>
    %cst_1 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %12 = stablehlo.multiply %11, %10 : tensor<3x5xf32>
    %13 = stablehlo.negate %10 : tensor<3x5xf32>
    %cst_2 = stablehlo.constant dense<0.707106769> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %15 = stablehlo.multiply %13, %14 : tensor<3x5xf32>
    %16 = chlo.erfc %15 : tensor<3x5xf32> -> tensor<3x5xf32>
    %17 = stablehlo.multiply %12, %16 : tensor<3x5xf32>
    %18 = stablehlo.dot_general %17, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x5xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
    return %6, %18 : tensor<8xf32>, tensor<3x2xf32>
  }
}
