module @IrToHlo.77 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<2x5xi64>, %arg1: tensor<11x6xf32>, %arg2: tensor<6x6xf32>, %arg3: tensor<2x5xi64>) -> tensor<f32> {
    %c = stablehlo.constant dense<-100> : tensor<10xi64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<10x11xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<10x11xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reshape %arg0 : (tensor<2x5xi64>) -> tensor<10xi64>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<10xi64>) -> tensor<10x11xi64>
    %2 = stablehlo.iota dim = 0 : tensor<11xi64>
    %3 = stablehlo.broadcast_in_dim %2, dims = [1] : (tensor<11xi64>) -> tensor<10x11xi64>
    %4 = stablehlo.compare  EQ, %1, %3 : (tensor<10x11xi64>, tensor<10x11xi64>) -> tensor<10x11xi1>
    %5 = stablehlo.select %4, %cst_0, %cst : tensor<10x11xi1>, tensor<10x11xf32>
    %6 = stablehlo.compare  NE, %5, %cst_0 : (tensor<10x11xf32>, tensor<10x11xf32>) -> tensor<10x11xi1>
    %7 = stablehlo.negate %5 : tensor<10x11xf32>
    %8 = stablehlo.reshape %arg3 : (tensor<2x5xi64>) -> tensor<10xi64>
    %9 = stablehlo.convert %8 : (tensor<10xi64>) -> tensor<10xui32>
    %10 = "stablehlo.gather"(%arg1, %9) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 6>}> : (tensor<11x6xf32>, tensor<10xui32>) -> tensor<10x6xf32>
    %11 = stablehlo.dot_general %10, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x6xf32>, tensor<6x6xf32>) -> tensor<10x6xf32>
    %12 = stablehlo.reshape %11 : (tensor<10x6xf32>) -> tensor<2x5x6xf32>
    %13 = stablehlo.tanh %12 : tensor<2x5x6xf32>
    %14 = stablehlo.reshape %13 : (tensor<2x5x6xf32>) -> tensor<10x6xf32>
    %15 = stablehlo.transpose %arg1, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[6,11]{0,1}"} : (tensor<11x6xf32>) -> tensor<6x11xf32>
    %16 = stablehlo.dot_general %14, %15, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<10x6xf32>, tensor<6x11xf32>) -> tensor<10x11xf32>
    %17 = stablehlo.reduce(%16 init: %cst_1) applies stablehlo.maximum across dimensions = [1] : (tensor<10x11xf32>, tensor<f32>) -> tensor<10xf32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [0] : (tensor<10xf32>) -> tensor<10x11xf32>
    %19 = stablehlo.subtract %16, %18 : tensor<10x11xf32>
    %20 = stablehlo.exponential %19 : tensor<10x11xf32>
    %21 = stablehlo.reduce(%20 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<10x11xf32>, tensor<f32>) -> tensor<10xf32>
    %22 = stablehlo.log %21 : tensor<10xf32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [0] : (tensor<10xf32>) -> tensor<10x11xf32>
    %24 = stablehlo.subtract %19, %23 : tensor<10x11xf32>
    %25 = stablehlo.multiply %7, %24 : tensor<10x11xf32>
    %26 = stablehlo.select %6, %cst, %25 : tensor<10x11xi1>, tensor<10x11xf32>
    %27 = stablehlo.compare  NE, %0, %c : (tensor<10xi64>, tensor<10xi64>) -> tensor<10xi1>
    %28 = stablehlo.broadcast_in_dim %27, dims = [0] : (tensor<10xi1>) -> tensor<10x11xi1>
    %29 = stablehlo.select %28, %cst_0, %cst : tensor<10x11xi1>, tensor<10x11xf32>
    %30 = stablehlo.multiply %29, %5 : tensor<10x11xf32>
    %31 = stablehlo.multiply %26, %30 : tensor<10x11xf32>
    %32 = stablehlo.reduce(%31 init: %cst_2) applies stablehlo.add across dimensions = [0, 1] : (tensor<10x11xf32>, tensor<f32>) -> tensor<f32>
    %33 = stablehlo.reduce(%30 init: %cst_2) applies stablehlo.add across dimensions = [0, 1] : (tensor<10x11xf32>, tensor<f32>) -> tensor<f32>
    %34 = stablehlo.divide %32, %33 : tensor<f32>
    return %34 : tensor<f32>
  }
}
