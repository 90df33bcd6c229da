module @IrToHlo.71 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>, %arg2: tensor<3x3x3x3xf32>, %arg3: tensor<3xf32>, %arg4: tensor<3xf32>, %arg5: tensor<3x3x3x3xf32>, %arg6: tensor<2x3x4x4xf32>, %arg7: tensor<f32>, %arg8: tensor<8xf32>) -> (tensor<2x3x4x4xf32>, tensor<8xf32>, tensor<8xf32>) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
    %cst_0 = stablehlo.constant dense<-1.000000e+00> : tensor<8xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<8xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<2x3x4x4xf32>
    %0 = stablehlo.maximum %arg6, %cst_2 : tensor<2x3x4x4xf32>
    %1 = stablehlo.convolution(%0, %arg5) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3x4x4xf32>, tensor<3x3x3x3xf32>) -> tensor<2x3x4x4xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%1, %arg4, %arg3) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
    %2 = stablehlo.maximum %output, %cst_2 : tensor<2x3x4x4xf32>
    %3 = stablehlo.convolution(%2, %arg2) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3x4x4xf32>, tensor<3x3x3x3xf32>) -> tensor<2x3x4x4xf32>
    %output_3, %batch_mean_4, %batch_var_5 = "stablehlo.batch_norm_training"(%3, %arg1, %arg0) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
    %4 = stablehlo.add %0, %output_3 : tensor<2x3x4x4xf32>
    %5 = stablehlo.maximum %4, %cst_2 : tensor<2x3x4x4xf32>
    %6 = stablehlo.broadcast_in_dim %arg7, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %7 = stablehlo.clamp %cst_1, %arg8, %6 : tensor<8xf32>
    %8 = stablehlo.clamp %cst_0, %arg8, %cst : tensor<8xf32>
    return %5, %7, %8 : tensor<2x3x4x4xf32>, tensor<8xf32>, tensor<8xf32>
  }
}
