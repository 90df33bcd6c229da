module @IrToHlo.125 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8x8xf32>, %arg2: tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<4x3xf32>) {
    %c = stablehlo.constant dense<0> : tensor<i64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<4x3xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<4x3x8xf32>
    %0 = call @scan.106(%c, %arg2, %arg1, %arg0, %cst, %cst_0, %cst_0) {xla_shape = "(s64[], f32[3,8]{1,0}, f32[4,8,8]{2,1,0}, f32[4,8]{1,0}, f32[4,3]{1,0}, /*index=5*/f32[4,3,8]{2,1,0}, f32[4,3,8]{2,1,0})"} : (tensor<i64>, tensor<3x8xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>) -> tuple<tensor<i64>, tensor<3x8xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>>
    %1 = stablehlo.get_tuple_element %0[1] : (tuple<tensor<i64>, tensor<3x8xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>>) -> tensor<3x8xf32>
    %2 = stablehlo.get_tuple_element %0[4] : (tuple<tensor<i64>, tensor<3x8xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>>) -> tensor<4x3xf32>
    return %1, %2 : tensor<3x8xf32>, tensor<4x3xf32>
  }
  func.func private @scan.106(%arg0: tensor<i64>, %arg1: tensor<3x8xf32>, %arg2: tensor<4x8x8xf32>, %arg3: tensor<4x8xf32>, %arg4: tensor<4x3xf32>, %arg5: tensor<4x3x8xf32>, %arg6: tensor<4x3x8xf32>) -> tuple<tensor<i64>, tensor<3x8xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>> {
    %c = stablehlo.constant dense<0> : tensor<i64>
    %c_0 = stablehlo.constant dense<1> : tensor<i64>
    %c_1 = stablehlo.constant dense<4> : tensor<i64>
    %0:5 = stablehlo.while(%iterArg = %arg0, %iterArg_2 = %arg1, %iterArg_3 = %arg4, %iterArg_4 = %arg5, %iterArg_5 = %arg6) : tensor<i64>, tensor<3x8xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>
    cond {
      %2 = stablehlo.compare  LT, %iterArg, %c_1 : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = stablehlo.add %iterArg, %c_0 : tensor<i64>
      %3 = stablehlo.dynamic_slice %arg3, %iterArg, %c, sizes = [1, 8] : (tensor<4x8xf32>, tensor<i64>, tensor<i64>) -> tensor<1x8xf32>
      %4 = stablehlo.reshape %3 : (tensor<1x8xf32>) -> tensor<8xf32>
      %5 = stablehlo.dynamic_slice %arg2, %iterArg, %c, %c, sizes = [1, 8, 8] : (tensor<4x8x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<1x8x8xf32>
      %6 = stablehlo.reshape %5 : (tensor<1x8x8xf32>) -> tensor<8x8xf32>
      %7 = func.call @FnComputation.24(%4, %6, %iterArg_2) {xla_shape = "(f32[3,8]{1,0}, f32[3]{0}, f32[3,8]{1,0}, f32[3,8]{1,0})"} : (tensor<8xf32>, tensor<8x8xf32>, tensor<3x8xf32>) -> tuple<tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>>
      %8 = stablehlo.get_tuple_element %7[0] : (tuple<tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>>) -> tensor<3x8xf32>
      %9 = stablehlo.get_tuple_element %7[1] : (tuple<tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>>) -> tensor<3xf32>
      %10 = stablehlo.reshape %9 : (tensor<3xf32>) -> tensor<1x3xf32>
      %11 = stablehlo.dynamic_update_slice %iterArg_3, %10, %iterArg, %c : (tensor<4x3xf32>, tensor<1x3xf32>, tensor<i64>, tensor<i64>) -> tensor<4x3xf32>
      %12 = stablehlo.get_tuple_element %7[2] : (tuple<tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>>) -> tensor<3x8xf32>
      %13 = stablehlo.reshape %12 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
      %14 = stablehlo.dynamic_update_slice %iterArg_4, %13, %iterArg, %c, %c : (tensor<4x3x8xf32>, tensor<1x3x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x3x8xf32>
      %15 = stablehlo.get_tuple_element %7[3] : (tuple<tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>>) -> tensor<3x8xf32>
      %16 = stablehlo.reshape %15 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
      %17 = stablehlo.dynamic_update_slice %iterArg_5, %16, %iterArg, %c, %c : (tensor<4x3x8xf32>, tensor<1x3x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x3x8xf32>
      stablehlo.return %2, %8, %11, %14, %17 : tensor<i64>, tensor<3x8xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>
    }
    %1 = stablehlo.tuple %0#0, %0#1, %arg2, %arg3, %0#2, %0#3, %0#4 {xla_shape = "(s64[], f32[3,8]{1,0}, f32[4,8,8]{2,1,0}, f32[4,8]{1,0}, f32[4,3]{1,0}, /*index=5*/f32[4,3,8]{2,1,0}, f32[4,3,8]{2,1,0})"} : tuple<tensor<i64>, tensor<3x8xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>>
    return %1 : tuple<tensor<i64>, tensor<3x8xf32>, tensor<4x8x8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>>
  }
  func.func private @FnComputation.24(%arg0: tensor<8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<3x8xf32>) -> tuple<tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.dot_general %arg2, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<8xf32>) -> tensor<3x8xf32>
    %2 = stablehlo.add %0, %1 : tensor<3x8xf32>
    %3 = stablehlo.tanh %2 : tensor<3x8xf32>
    %4 = stablehlo.add %arg2, %3 : tensor<3x8xf32>
    %5 = stablehlo.reduce(%4 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<3x8xf32>, tensor<f32>) -> tensor<3xf32>
    %6 = stablehlo.tuple %4, %5, %arg2, %3 {xla_shape = "(f32[3,8]{1,0}, f32[3]{0}, f32[3,8]{1,0}, f32[3,8]{1,0})"} : tuple<tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>>
    return %6 : tuple<tensor<3x8xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>>
  }
}
