module @IrToHlo.130 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<f32>, %arg1: tensor<i64>, %arg2: tensor<5x6xf32>, %arg3: tensor<4x5xf32>) -> (tensor<4x6xf32>, tensor<3xf32>) {
    %cst = stablehlo.constant dense<1.000000e-07> : tensor<2x1xf32>
    %cst_0 = stablehlo.constant dense<-2.000000e+00> : tensor<2x1xf32>
    %cst_1 = stablehlo.constant dense<1.1920929E-7> : tensor<2x2xf32>
    %c = stablehlo.constant dense<9> : tensor<2x2xui32>
    %cst_2 = stablehlo.constant dense<6.28318548> : tensor<2x1xf32>
    %cst_3 = stablehlo.constant dense<1.1920929E-7> : tensor<3xf32>
    %c_4 = stablehlo.constant dense<9> : tensor<3xui32>
    %cst_5 = stablehlo.constant dense<1.1920929E-7> : tensor<4x6xf32>
    %c_6 = stablehlo.constant dense<9> : tensor<4x6xui32>
    %c_7 = stablehlo.constant dense<0> : tensor<1xui64>
    %c_8 = stablehlo.constant dense<2531011> : tensor<i64>
    %c_9 = stablehlo.constant dense<214013> : tensor<i64>
    %0 = stablehlo.multiply %arg1, %c_9 : tensor<i64>
    %1 = stablehlo.add %0, %c_8 : tensor<i64>
    %2 = stablehlo.convert %1 : (tensor<i64>) -> tensor<ui64>
    %3 = stablehlo.reshape %2 : (tensor<ui64>) -> tensor<1xui64>
    %4 = stablehlo.concatenate %3, %c_7, dim = 0 : (tensor<1xui64>, tensor<1xui64>) -> tensor<2xui64>
    %output_state, %output = stablehlo.rng_bit_generator %4, algorithm =  DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4x6xui32>)
    %5 = stablehlo.multiply %1, %c_9 : tensor<i64>
    %6 = stablehlo.add %5, %c_8 : tensor<i64>
    %7 = stablehlo.multiply %6, %c_9 : tensor<i64>
    %8 = stablehlo.add %7, %c_8 : tensor<i64>
    %9 = stablehlo.convert %8 : (tensor<i64>) -> tensor<ui64>
    %10 = stablehlo.reshape %9 : (tensor<ui64>) -> tensor<1xui64>
    %11 = stablehlo.concatenate %10, %c_7, dim = 0 : (tensor<1xui64>, tensor<1xui64>) -> tensor<2xui64>
    %output_state_10, %output_11 = stablehlo.rng_bit_generator %11, algorithm =  DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x2xui32>)
    %12 = stablehlo.convert %6 : (tensor<i64>) -> tensor<ui64>
    %13 = stablehlo.reshape %12 : (tensor<ui64>) -> tensor<1xui64>
    %14 = stablehlo.concatenate %13, %c_7, dim = 0 : (tensor<1xui64>, tensor<1xui64>) -> tensor<2xui64>
    %output_state_12, %output_13 = stablehlo.rng_bit_generator %14, algorithm =  DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui32>)
    %15 = stablehlo.dot_general %arg3, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
    %16 = stablehlo.shift_right_logical %output, %c_6 : tensor<4x6xui32>
    %17 = stablehlo.convert %16 : (tensor<4x6xui32>) -> tensor<4x6xf32>
    %18 = stablehlo.multiply %17, %cst_5 : tensor<4x6xf32>
    %19 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %20 = stablehlo.compare  LT, %18, %19 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
    %21 = stablehlo.convert %20 : (tensor<4x6xi1>) -> tensor<4x6xf32>
    %22 = stablehlo.divide %21, %19 : tensor<4x6xf32>
    %23 = stablehlo.multiply %15, %22 : tensor<4x6xf32>
    %24 = stablehlo.shift_right_logical %output_13, %c_4 : tensor<3xui32>
    %25 = stablehlo.convert %24 : (tensor<3xui32>) -> tensor<3xf32>
    %26 = stablehlo.multiply %25, %cst_3 : tensor<3xf32>
    %27 = stablehlo.shift_right_logical %output_11, %c : tensor<2x2xui32>
    %28 = stablehlo.convert %27 : (tensor<2x2xui32>) -> tensor<2x2xf32>
    %29 = stablehlo.multiply %28, %cst_1 : tensor<2x2xf32>
    %30 = stablehlo.slice %29 [0:2, 1:2] : (tensor<2x2xf32>) -> tensor<2x1xf32>
    %31 = stablehlo.multiply %30, %cst_2 : tensor<2x1xf32>
    %32 = stablehlo.sine %31 : tensor<2x1xf32>
    %33 = stablehlo.slice %29 [0:2, 0:1] : (tensor<2x2xf32>) -> tensor<2x1xf32>
    %34 = stablehlo.maximum %33, %cst : tensor<2x1xf32>
    %35 = stablehlo.log %34 : tensor<2x1xf32>
    %36 = stablehlo.multiply %35, %cst_0 : tensor<2x1xf32>
    %37 = stablehlo.sqrt %36 : tensor<2x1xf32>
    %38 = stablehlo.multiply %32, %37 : tensor<2x1xf32>
    %39 = stablehlo.cosine %31 : tensor<2x1xf32>
    %40 = stablehlo.multiply %39, %37 : tensor<2x1xf32>
    %41 = stablehlo.concatenate %38, %40, dim = 1 : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
    %42 = stablehlo.reshape %41 : (tensor<2x2xf32>) -> tensor<4xf32>
    %43 = stablehlo.slice %42 [0:3] : (tensor<4xf32>) -> tensor<3xf32>
    %44 = stablehlo.add %26, %43 : tensor<3xf32>
    return %23, %44 : tensor<4x6xf32>, tensor<3xf32>
  }
}
