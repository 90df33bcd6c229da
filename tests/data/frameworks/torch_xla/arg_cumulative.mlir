module @IrToHlo.112 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<4x5xf32>) -> (tensor<4xf32>, tensor<4xi64>, tensor<5xi64>, tensor<4x5xf32>, tensor<4x5xi32>, tensor<4x5xf32>) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %cst_1 = stablehlo.constant dense<-3.40282347E+38> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.iota dim = 0 : tensor<5xi32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<5xi32>) -> tensor<4x5xi32>
    %2:2 = "stablehlo.reduce_window"(%arg0, %1, %cst_2, %c) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [4, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 5>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<f32>, %arg4: tensor<i32>):
      %12 = stablehlo.compare  GE, %arg1, %arg3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %13 = stablehlo.select %12, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %14 = stablehlo.compare  EQ, %arg1, %arg3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %15 = stablehlo.minimum %arg2, %arg4 : tensor<i32>
      %16 = stablehlo.select %12, %arg2, %arg4 : tensor<i1>, tensor<i32>
      %17 = stablehlo.select %14, %15, %16 : tensor<i1>, tensor<i32>
      stablehlo.return %13, %17 : tensor<f32>, tensor<i32>
    }) : (tensor<4x5xf32>, tensor<4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<4x5xf32>, tensor<4x5xi32>)
    %3 = stablehlo.iota dim = 0 : tensor<4xi32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0] : (tensor<4xi32>) -> tensor<4x5xi32>
    %5:2 = "stablehlo.reduce_window"(%arg0, %4, %cst_2, %c) <{base_dilations = array<i64: 1, 1>, padding = dense<[[3, 0], [0, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 4, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<f32>, %arg4: tensor<i32>):
      %12 = stablehlo.compare  GE, %arg1, %arg3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %13 = stablehlo.select %12, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %14 = stablehlo.compare  EQ, %arg1, %arg3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %15 = stablehlo.minimum %arg2, %arg4 : tensor<i32>
      %16 = stablehlo.select %12, %arg2, %arg4 : tensor<i1>, tensor<i32>
      %17 = stablehlo.select %14, %15, %16 : tensor<i1>, tensor<i32>
      stablehlo.return %13, %17 : tensor<f32>, tensor<i32>
    }) : (tensor<4x5xf32>, tensor<4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<4x5xf32>, tensor<4x5xi32>)
    %6 = stablehlo.reduce(%arg0 init: %cst_1) applies stablehlo.maximum across dimensions = [1] : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
    %7:2 = stablehlo.reduce(%arg0 init: %cst_2), (%1 init: %c) across dimensions = [1] : (tensor<4x5xf32>, tensor<4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %12 = stablehlo.compare  GE, %arg1, %arg3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %13 = stablehlo.select %12, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %14 = stablehlo.compare  EQ, %arg1, %arg3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %15 = stablehlo.minimum %arg2, %arg4 : tensor<i32>
      %16 = stablehlo.select %12, %arg2, %arg4 : tensor<i1>, tensor<i32>
      %17 = stablehlo.select %14, %15, %16 : tensor<i1>, tensor<i32>
      stablehlo.return %13, %17 : tensor<f32>, tensor<i32>
    }
    %8 = stablehlo.convert %7#1 : (tensor<4xi32>) -> tensor<4xi64>
    %9:2 = stablehlo.reduce(%arg0 init: %cst_0), (%4 init: %c) across dimensions = [0] : (tensor<4x5xf32>, tensor<4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<5xf32>, tensor<5xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %12 = stablehlo.compare  LE, %arg1, %arg3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %13 = stablehlo.select %12, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %14 = stablehlo.compare  EQ, %arg1, %arg3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %15 = stablehlo.minimum %arg2, %arg4 : tensor<i32>
      %16 = stablehlo.select %12, %arg2, %arg4 : tensor<i1>, tensor<i32>
      %17 = stablehlo.select %14, %15, %16 : tensor<i1>, tensor<i32>
      stablehlo.return %13, %17 : tensor<f32>, tensor<i32>
    }
    %10 = stablehlo.convert %9#1 : (tensor<5xi32>) -> tensor<5xi64>
    %11 = "stablehlo.reduce_window"(%arg0, %cst) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [4, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 5>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %12 = stablehlo.multiply %arg1, %arg2 : tensor<f32>
      stablehlo.return %12 : tensor<f32>
    }) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
    return %6, %8, %10, %2#0, %5#1, %11 : tensor<4xf32>, tensor<4xi64>, tensor<5xi64>, tensor<4x5xf32>, tensor<4x5xi32>, tensor<4x5xf32>
  }
}
