module @IrToHlo.142 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<16x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>, %arg4: tensor<8xf32>, %arg5: tensor<2x4x8xf32>, %arg6: tensor<8xf32>, %arg7: tensor<f64>, %arg8: tensor<f32>, %arg9: tensor<8x8xf32>, %arg10: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<2x4x16xf32>
    %cst_0 = stablehlo.constant dense<0.707106769> : tensor<2x4x16xf32>
    %cst_1 = stablehlo.constant dense<5.000000e-01> : tensor<2x4x16xf32>
    %c = stablehlo.constant dense<true> : tensor<4x4xi1>
    %c_2 = stablehlo.constant dense<false> : tensor<4x4xi1>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<8xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reshape %arg5 : (tensor<2x4x8xf32>) -> tensor<1x8x8xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%0, %cst_4, %cst_3) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<1x8x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %1 = stablehlo.iota dim = 0 : tensor<4xi32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<4xi32>) -> tensor<4x4xi32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [1] : (tensor<4xi32>) -> tensor<4x4xi32>
    %4 = stablehlo.compare  GE, %2, %3 : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %5 = stablehlo.select %4, %c_2, %c : tensor<4x4xi1>, tensor<4x4xi1>
    %6 = stablehlo.broadcast_in_dim %5, dims = [1, 2] : (tensor<4x4xi1>) -> tensor<2x4x4xi1>
    %7 = stablehlo.convert %arg7 : (tensor<f64>) -> tensor<f32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [] : (tensor<f32>) -> tensor<2x4x4xf32>
    %9 = stablehlo.broadcast_in_dim %arg6, dims = [2] : (tensor<8xf32>) -> tensor<2x4x8xf32>
    %10 = stablehlo.reshape %output : (tensor<1x8x8xf32>) -> tensor<2x4x8xf32>
    %11 = stablehlo.broadcast_in_dim %arg4, dims = [2] : (tensor<8xf32>) -> tensor<2x4x8xf32>
    %12 = stablehlo.multiply %10, %11 : tensor<2x4x8xf32>
    %13 = stablehlo.add %9, %12 : tensor<2x4x8xf32>
    %14 = stablehlo.reshape %13 : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
    %15 = stablehlo.dot_general %14, %arg10, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %16 = stablehlo.reshape %15 : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %17 = stablehlo.dot_general %14, %arg9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %18 = stablehlo.reshape %17 : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %19 = stablehlo.transpose %18, dims = [0, 2, 1] {result_layout = dense<[1, 2, 0]> : tensor<3xindex>, xla_shape = "f32[2,8,4]{1,2,0}"} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
    %20 = stablehlo.dot_general %16, %19, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
    %21 = stablehlo.broadcast_in_dim %arg8, dims = [] : (tensor<f32>) -> tensor<2x4x4xf32>
    %22 = stablehlo.divide %20, %21 : tensor<2x4x4xf32>
    %23 = stablehlo.select %6, %8, %22 : tensor<2x4x4xi1>, tensor<2x4x4xf32>
    %24 = stablehlo.reduce(%23 init: %cst_5) applies stablehlo.maximum across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %26 = stablehlo.subtract %23, %25 : tensor<2x4x4xf32>
    %27 = stablehlo.exponential %26 : tensor<2x4x4xf32>
    %28 = stablehlo.reduce(%27 init: %cst_6) applies stablehlo.add across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %30 = stablehlo.divide %27, %29 : tensor<2x4x4xf32>
    %31 = stablehlo.dot_general %14, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %32 = stablehlo.reshape %31 : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %33 = stablehlo.dot_general %30, %32, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %34 = stablehlo.reshape %33 : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
    %35 = stablehlo.dot_general %34, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %36 = stablehlo.reshape %35 : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %37 = stablehlo.add %arg5, %36 : tensor<2x4x8xf32>
    %38 = stablehlo.reshape %37 : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
    %39 = stablehlo.dot_general %38, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %40 = stablehlo.reshape %39 : (tensor<8x16xf32>) -> tensor<2x4x16xf32>
    %41 = stablehlo.multiply %40, %cst_1 : tensor<2x4x16xf32>
    %42 = stablehlo.multiply %40, %cst_0 : tensor<2x4x16xf32>
    %43 = stablehlo.custom_call @mhlo.erf(%42) {mhlo.attributes = {}, mhlo.version = 1 : i64} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    %44 = stablehlo.add %43, %cst : tensor<2x4x16xf32>
    %45 = stablehlo.multiply %41, %44 : tensor<2x4x16xf32>
    %46 = stablehlo.reshape %45 : (tensor<2x4x16xf32>) -> tensor<8x16xf32>
    %47 = stablehlo.dot_general %46, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    %48 = stablehlo.reshape %47 : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %49 = stablehlo.add %37, %48 : tensor<2x4x8xf32>
    return %49 : tensor<2x4x8xf32>
  }
}
