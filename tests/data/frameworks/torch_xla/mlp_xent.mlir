module @IrToHlo.82 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<8xi64>, %arg1: tensor<5xf32>, %arg2: tensor<5x16xf32>, %arg3: tensor<16xf32>, %arg4: tensor<16x6xf32>, %arg5: tensor<8x6xf32>) -> (tensor<f32>, tensor<8x5xf32>) {
    %c = stablehlo.constant dense<-100> : tensor<8xi64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<8x16xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<8x5xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<8x5xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0] : (tensor<8xi64>) -> tensor<8x5xi64>
    %1 = stablehlo.iota dim = 0 : tensor<5xi64>
    %2 = stablehlo.broadcast_in_dim %1, dims = [1] : (tensor<5xi64>) -> tensor<8x5xi64>
    %3 = stablehlo.compare  EQ, %0, %2 : (tensor<8x5xi64>, tensor<8x5xi64>) -> tensor<8x5xi1>
    %4 = stablehlo.select %3, %cst_1, %cst_0 : tensor<8x5xi1>, tensor<8x5xf32>
    %5 = stablehlo.compare  NE, %4, %cst_1 : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xi1>
    %6 = stablehlo.negate %4 : tensor<8x5xf32>
    %7 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[6,16]{0,1}"} : (tensor<16x6xf32>) -> tensor<6x16xf32>
    %8 = stablehlo.dot_general %arg5, %7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x6xf32>, tensor<6x16xf32>) -> tensor<8x16xf32>
    %9 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<16xf32>) -> tensor<8x16xf32>
    %10 = stablehlo.add %8, %9 : tensor<8x16xf32>
    %11 = stablehlo.maximum %10, %cst : tensor<8x16xf32>
    %12 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,5]{0,1}"} : (tensor<5x16xf32>) -> tensor<16x5xf32>
    %13 = stablehlo.dot_general %11, %12, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x5xf32>) -> tensor<8x5xf32>
    %14 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<5xf32>) -> tensor<8x5xf32>
    %15 = stablehlo.add %13, %14 : tensor<8x5xf32>
    %16 = stablehlo.reduce(%15 init: %cst_2) applies stablehlo.maximum across dimensions = [1] : (tensor<8x5xf32>, tensor<f32>) -> tensor<8xf32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [0] : (tensor<8xf32>) -> tensor<8x5xf32>
    %18 = stablehlo.subtract %15, %17 : tensor<8x5xf32>
    %19 = stablehlo.exponential %18 : tensor<8x5xf32>
    %20 = stablehlo.reduce(%19 init: %cst_3) applies stablehlo.add across dimensions = [1] : (tensor<8x5xf32>, tensor<f32>) -> tensor<8xf32>
    %21 = stablehlo.log %20 : tensor<8xf32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [0] : (tensor<8xf32>) -> tensor<8x5xf32>
    %23 = stablehlo.subtract %18, %22 : tensor<8x5xf32>
    %24 = stablehlo.multiply %6, %23 : tensor<8x5xf32>
    %25 = stablehlo.select %5, %cst_0, %24 : tensor<8x5xi1>, tensor<8x5xf32>
    %26 = stablehlo.compare  NE, %arg0, %c : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
    %27 = stablehlo.broadcast_in_dim %26, dims = [0] : (tensor<8xi1>) -> tensor<8x5xi1>
    %28 = stablehlo.select %27, %cst_1, %cst_0 : tensor<8x5xi1>, tensor<8x5xf32>
    %29 = stablehlo.multiply %28, %4 : tensor<8x5xf32>
    %30 = stablehlo.multiply %25, %29 : tensor<8x5xf32>
    %31 = stablehlo.reduce(%30 init: %cst_3) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x5xf32>, tensor<f32>) -> tensor<f32>
    %32 = stablehlo.reduce(%29 init: %cst_3) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x5xf32>, tensor<f32>) -> tensor<f32>
    %33 = stablehlo.divide %31, %32 : tensor<f32>
    return %33, %15 : tensor<f32>, tensor<8x5xf32>
  }
}
