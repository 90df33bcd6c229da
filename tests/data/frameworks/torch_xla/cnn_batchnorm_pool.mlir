module @IrToHlo.123 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<4x3xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>, %arg3: tensor<4x3x3x3xf32>, %arg4: tensor<2x3x6x6xf32>) -> tensor<2x3xf32> {
    %cst = stablehlo.constant dense<6.250000e-02> : tensor<2x4xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<5x5xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<2x4x6x6xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.convolution(%arg4, %arg3) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%0, %arg2, %arg1) <{epsilon = 1.000000e-03 : f32, feature_index = 1 : i64}> : (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>)
    %1 = stablehlo.maximum %output, %cst_1 : tensor<2x4x6x6xf32>
    %2 = "stablehlo.reduce_window"(%1, %cst_2) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %11 = stablehlo.maximum %arg5, %arg6 : tensor<f32>
      stablehlo.return %11 : tensor<f32>
    }) : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x3x3xf32>
    %3 = stablehlo.pad %2, %cst_3, low = [0, 0, 1, 1], high = [0, 0, 1, 1], interior = [0, 0, 0, 0] : (tensor<2x4x3x3xf32>, tensor<f32>) -> tensor<2x4x5x5xf32>
    %4 = "stablehlo.reduce_window"(%3, %cst_3) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 1, 1>}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %11 = stablehlo.add %arg5, %arg6 : tensor<f32>
      stablehlo.return %11 : tensor<f32>
    }) : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x4x4xf32>
    %5 = "stablehlo.reduce_window"(%cst_0, %cst_3) <{base_dilations = array<i64: 1, 1>, padding = dense<0> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %11 = stablehlo.add %arg5, %arg6 : tensor<f32>
      stablehlo.return %11 : tensor<f32>
    }) : (tensor<5x5xf32>, tensor<f32>) -> tensor<4x4xf32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [2, 3] : (tensor<4x4xf32>) -> tensor<2x4x4x4xf32>
    %7 = stablehlo.divide %4, %6 : tensor<2x4x4x4xf32>
    %8 = stablehlo.reduce(%7 init: %cst_3) applies stablehlo.add across dimensions = [2, 3] : (tensor<2x4x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %9 = stablehlo.multiply %8, %cst : tensor<2x4xf32>
    %10 = stablehlo.dot_general %9, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    return %10 : tensor<2x3xf32>
  }
}
