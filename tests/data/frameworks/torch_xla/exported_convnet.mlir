module @IrToHlo.217 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<4xf32>, %arg3: tensor<4xf32>, %arg4: tensor<4x3x3x3xf32>, %arg5: tensor<2x3x6x6xf32>, %arg6: tensor<4xf32>) -> tensor<2x3xf32> {
    %cst = stablehlo.constant dense<0.027777778> : tensor<2x4xf32>
    %cst_0 = stablehlo.constant dense<5.000000e-01> : tensor<6x3xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<6xf32>
    %cst_2 = stablehlo.constant dense<5.000000e-01> : tensor<6xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<6xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<6x3xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<6x3xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
    %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<4xf32>
    %cst_8 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.convolution(%arg5, %arg4) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
    %1 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<4xf32>) -> tensor<2x4x6x6xf32>
    %2 = stablehlo.add %0, %1 : tensor<2x4x6x6xf32>
    %3 = stablehlo.reshape %2 : (tensor<2x4x6x6xf32>) -> tensor<1x4x72xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%3, %cst_7, %cst_6) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x4x72xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x72xf32>, tensor<4xf32>, tensor<4xf32>)
    %4 = stablehlo.broadcast_in_dim %arg6, dims = [1] : (tensor<4xf32>) -> tensor<2x4x6x6xf32>
    %5 = stablehlo.reshape %output : (tensor<1x4x72xf32>) -> tensor<2x4x6x6xf32>
    %6 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<4xf32>) -> tensor<2x4x6x6xf32>
    %7 = stablehlo.multiply %5, %6 : tensor<2x4x6x6xf32>
    %8 = stablehlo.add %4, %7 : tensor<2x4x6x6xf32>
    %9 = stablehlo.logistic %8 : tensor<2x4x6x6xf32>
    %10 = stablehlo.multiply %8, %9 : tensor<2x4x6x6xf32>
    %11 = "stablehlo.reduce_window"(%10, %cst_8) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%arg7: tensor<f32>, %arg8: tensor<f32>):
      %46 = stablehlo.maximum %arg7, %arg8 : tensor<f32>
      stablehlo.return %46 : tensor<f32>
    }) : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x3x3xf32>
    %12 = stablehlo.iota dim = 0 : tensor<6xf32>
    %13 = stablehlo.add %12, %cst_2 : tensor<6xf32>
    %14 = stablehlo.multiply %13, %cst_2 : tensor<6xf32>
    %15 = stablehlo.subtract %14, %cst_1 : tensor<6xf32>
    %16 = stablehlo.subtract %15, %cst_2 : tensor<6xf32>
    %17 = stablehlo.ceil %16 : tensor<6xf32>
    %18 = stablehlo.clamp %cst_3, %17, %cst_3 : tensor<6xf32>
    %19 = stablehlo.subtract %18, %14 : tensor<6xf32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [0] : (tensor<6xf32>) -> tensor<6x3xf32>
    %21 = stablehlo.iota dim = 0 : tensor<3xf32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [1] : (tensor<3xf32>) -> tensor<6x3xf32>
    %23 = stablehlo.add %20, %22 : tensor<6x3xf32>
    %24 = stablehlo.add %23, %cst_0 : tensor<6x3xf32>
    %25 = stablehlo.abs %24 : tensor<6x3xf32>
    %26 = stablehlo.subtract %cst_4, %25 : tensor<6x3xf32>
    %27 = stablehlo.maximum %26, %cst_5 : tensor<6x3xf32>
    %28 = stablehlo.reduce(%27 init: %cst_9) applies stablehlo.add across dimensions = [1] : (tensor<6x3xf32>, tensor<f32>) -> tensor<6xf32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [0] : (tensor<6xf32>) -> tensor<6x3xf32>
    %30 = stablehlo.divide %27, %29 : tensor<6x3xf32>
    %31 = stablehlo.dot_general %30, %30, contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] : (tensor<6x3xf32>, tensor<6x3xf32>) -> tensor<6x3x6x3xf32>
    %32 = stablehlo.transpose %11, dims = [0, 3, 2, 1] {result_layout = dense<[1, 2, 3, 0]> : tensor<4xindex>, xla_shape = "f32[2,3,3,4]{1,2,3,0}"} : (tensor<2x4x3x3xf32>) -> tensor<2x3x3x4xf32>
    %33 = stablehlo.broadcast_in_dim %18, dims = [0] : (tensor<6xf32>) -> tensor<6x6x1xf32>
    %34 = stablehlo.broadcast_in_dim %18, dims = [1] : (tensor<6xf32>) -> tensor<6x6x1xf32>
    %35 = stablehlo.concatenate %33, %34, dim = 2 : (tensor<6x6x1xf32>, tensor<6x6x1xf32>) -> tensor<6x6x2xf32>
    %36 = stablehlo.convert %35 : (tensor<6x6x2xf32>) -> tensor<6x6x2xi32>
    %37 = "stablehlo.gather"(%32, %36) <{dimension_numbers = #stablehlo.gather<offset_dims = [0, 1, 2, 3], start_index_map = [1, 2], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 2, 3, 3, 4>}> : (tensor<2x3x3x4xf32>, tensor<6x6x2xi32>) -> tensor<2x3x3x4x6x6xf32>
    %38 = stablehlo.dot_general %31, %37, batching_dims = [2, 0] x [4, 5], contracting_dims = [3, 1] x [1, 2], precision = [DEFAULT, DEFAULT] : (tensor<6x3x6x3xf32>, tensor<2x3x3x4x6x6xf32>) -> tensor<6x6x2x4xf32>
    %39 = stablehlo.transpose %38, dims = [2, 3, 1, 0] : (tensor<6x6x2x4xf32>) -> tensor<2x4x6x6xf32>
    %40 = stablehlo.reduce(%39 init: %cst_9) applies stablehlo.add across dimensions = [2, 3] : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4xf32>
    %41 = stablehlo.multiply %40, %cst : tensor<2x4xf32>
    %42 = stablehlo.transpose %arg1, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[4,3]{0,1}"} : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %43 = stablehlo.dot_general %41, %42, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %44 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
    %45 = stablehlo.add %43, %44 : tensor<2x3xf32>
    return %45 : tensor<2x3xf32>
  }
}
