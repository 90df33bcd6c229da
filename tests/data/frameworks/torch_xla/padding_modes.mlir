module @IrToHlo.80 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<2x3x4x4xf32>, %arg1: tensor<2x3x5xf32>) -> (tensor<2x3x7x7xf32>, tensor<2x3x6x6xf32>, tensor<2x3x6x6xf32>, tensor<2x3x8xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x3x6x4xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<2x3x6x6xf32>
    %c = stablehlo.constant dense<"0xF0FF0FF0FF0FF0FF0FF0FF0FF0FF0FF0FF0F"> : tensor<2x3x6x4xi1>
    %c_1 = stablehlo.constant dense<"0x9EE7799EE7799EE7799EE7799EE7799EE7799EE7799EE7799EE779"> : tensor<2x3x6x6xi1>
    %c_2 = stablehlo.constant dense<"0x411004411004411004411004411004411004411004411004411004"> : tensor<2x3x6x6xi1>
    %c_3 = stablehlo.constant dense<"0x200882200882200882200882200882200882200882200882200882"> : tensor<2x3x6x6xi1>
    %c_4 = stablehlo.constant dense<"0x3F000000F0030000003F000000F0030000003F000000F003000000"> : tensor<2x3x6x6xi1>
    %c_5 = stablehlo.constant dense<"0x000000C00F000000FC000000C00F000000FC000000C00F000000FC"> : tensor<2x3x6x6xi1>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reverse %arg0, dims = [3] : tensor<2x3x4x4xf32>
    %1 = stablehlo.slice %0 [0:2, 0:3, 0:4, 2:3] : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x1xf32>
    %2 = stablehlo.slice %0 [0:2, 0:3, 0:4, 1:3] : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x2xf32>
    %3 = stablehlo.concatenate %1, %arg0, %2, dim = 3 : (tensor<2x3x4x1xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4x2xf32>) -> tensor<2x3x4x7xf32>
    %4 = stablehlo.reverse %3, dims = [2] : tensor<2x3x4x7xf32>
    %5 = stablehlo.slice %4 [0:2, 0:3, 1:3, 0:7] : (tensor<2x3x4x7xf32>) -> tensor<2x3x2x7xf32>
    %6 = stablehlo.slice %4 [0:2, 0:3, 1:2, 0:7] : (tensor<2x3x4x7xf32>) -> tensor<2x3x1x7xf32>
    %7 = stablehlo.concatenate %5, %3, %6, dim = 2 : (tensor<2x3x2x7xf32>, tensor<2x3x4x7xf32>, tensor<2x3x1x7xf32>) -> tensor<2x3x7x7xf32>
    %8 = stablehlo.slice %arg0 [0:2, 0:3, 0:4, 0:1] : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x1xf32>
    %9 = stablehlo.slice %arg0 [0:2, 0:3, 0:4, 3:4] : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x1xf32>
    %10 = stablehlo.concatenate %8, %arg0, %9, dim = 3 : (tensor<2x3x4x1xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4x1xf32>) -> tensor<2x3x4x6xf32>
    %11 = stablehlo.slice %10 [0:2, 0:3, 3:4, 0:6] : (tensor<2x3x4x6xf32>) -> tensor<2x3x1x6xf32>
    %12 = stablehlo.reshape %11 : (tensor<2x3x1x6xf32>) -> tensor<2x3x6xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1, 3] : (tensor<2x3x6xf32>) -> tensor<2x3x2x6xf32>
    %14 = stablehlo.concatenate %10, %13, dim = 2 : (tensor<2x3x4x6xf32>, tensor<2x3x2x6xf32>) -> tensor<2x3x6x6xf32>
    %15 = stablehlo.pad %arg0, %cst_6, low = [0, 0, 1, 0], high = [0, 0, 1, 0], interior = [0, 0, 0, 0] : (tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x6x4xf32>
    %16 = stablehlo.select %c, %15, %cst : tensor<2x3x6x4xi1>, tensor<2x3x6x4xf32>
    %17 = stablehlo.pad %16, %cst_6, low = [0, 0, 0, 1], high = [0, 0, 0, 1], interior = [0, 0, 0, 0] : (tensor<2x3x6x4xf32>, tensor<f32>) -> tensor<2x3x6x6xf32>
    %18 = stablehlo.select %c_1, %17, %cst_0 : tensor<2x3x6x6xi1>, tensor<2x3x6x6xf32>
    %19 = stablehlo.slice %18 [0:2, 0:3, 0:6, 4:5] : (tensor<2x3x6x6xf32>) -> tensor<2x3x6x1xf32>
    %20 = stablehlo.pad %19, %cst_6, low = [0, 0, 0, 0], high = [0, 0, 0, 5], interior = [0, 0, 0, 0] : (tensor<2x3x6x1xf32>, tensor<f32>) -> tensor<2x3x6x6xf32>
    %21 = stablehlo.select %c_2, %20, %18 : tensor<2x3x6x6xi1>, tensor<2x3x6x6xf32>
    %22 = stablehlo.slice %21 [0:2, 0:3, 0:6, 1:2] : (tensor<2x3x6x6xf32>) -> tensor<2x3x6x1xf32>
    %23 = stablehlo.pad %22, %cst_6, low = [0, 0, 0, 5], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x3x6x1xf32>, tensor<f32>) -> tensor<2x3x6x6xf32>
    %24 = stablehlo.select %c_3, %23, %21 : tensor<2x3x6x6xi1>, tensor<2x3x6x6xf32>
    %25 = stablehlo.slice %24 [0:2, 0:3, 4:5, 0:6] : (tensor<2x3x6x6xf32>) -> tensor<2x3x1x6xf32>
    %26 = stablehlo.pad %25, %cst_6, low = [0, 0, 0, 0], high = [0, 0, 5, 0], interior = [0, 0, 0, 0] : (tensor<2x3x1x6xf32>, tensor<f32>) -> tensor<2x3x6x6xf32>
    %27 = stablehlo.select %c_4, %26, %24 : tensor<2x3x6x6xi1>, tensor<2x3x6x6xf32>
    %28 = stablehlo.slice %27 [0:2, 0:3, 1:2, 0:6] : (tensor<2x3x6x6xf32>) -> tensor<2x3x1x6xf32>
    %29 = stablehlo.pad %28, %cst_6, low = [0, 0, 5, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x3x1x6xf32>, tensor<f32>) -> tensor<2x3x6x6xf32>
    %30 = stablehlo.select %c_5, %29, %27 : tensor<2x3x6x6xi1>, tensor<2x3x6x6xf32>
    %31 = stablehlo.reverse %arg1, dims = [2] : tensor<2x3x5xf32>
    %32 = stablehlo.slice %31 [0:2, 0:3, 2:4] : (tensor<2x3x5xf32>) -> tensor<2x3x2xf32>
    %33 = stablehlo.slice %31 [0:2, 0:3, 1:2] : (tensor<2x3x5xf32>) -> tensor<2x3x1xf32>
    %34 = stablehlo.concatenate %32, %arg1, %33, dim = 2 : (tensor<2x3x2xf32>, tensor<2x3x5xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
    return %7, %14, %30, %34 : tensor<2x3x7x7xf32>, tensor<2x3x6x6xf32>, tensor<2x3x6x6xf32>, tensor<2x3x8xf32>
  }
}
