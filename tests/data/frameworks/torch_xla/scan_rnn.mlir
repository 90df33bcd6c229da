module @IrToHlo.133 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<5x2x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<5x2xf32>) {
    %c = stablehlo.constant dense<0> : tensor<i64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<5x2xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<5x2x4xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<5x4x4xf32>
    %0 = call @scan.112(%c, %arg2, %arg1, %arg0, %cst, %cst_0, %cst_1, %cst_0) {xla_shape = "(s64[], f32[2,4]{1,0}, f32[4,4]{1,0}, f32[5,2,4]{2,1,0}, f32[5,2]{1,0}, /*index=5*/f32[5,2,4]{2,1,0}, f32[5,4,4]{2,1,0}, f32[5,2,4]{2,1,0})"} : (tensor<i64>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<5x2x4xf32>, tensor<5x2xf32>, tensor<5x2x4xf32>, tensor<5x4x4xf32>, tensor<5x2x4xf32>) -> tuple<tensor<i64>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<5x2x4xf32>, tensor<5x2xf32>, tensor<5x2x4xf32>, tensor<5x4x4xf32>, tensor<5x2x4xf32>>
    %1 = stablehlo.get_tuple_element %0[1] : (tuple<tensor<i64>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<5x2x4xf32>, tensor<5x2xf32>, tensor<5x2x4xf32>, tensor<5x4x4xf32>, tensor<5x2x4xf32>>) -> tensor<2x4xf32>
    %2 = stablehlo.get_tuple_element %0[4] : (tuple<tensor<i64>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<5x2x4xf32>, tensor<5x2xf32>, tensor<5x2x4xf32>, tensor<5x4x4xf32>, tensor<5x2x4xf32>>) -> tensor<5x2xf32>
    return %1, %2 : tensor<2x4xf32>, tensor<5x2xf32>
  }
  func.func private @scan.112(%arg0: tensor<i64>, %arg1: tensor<2x4xf32>, %arg2: tensor<4x4xf32>, %arg3: tensor<5x2x4xf32>, %arg4: tensor<5x2xf32>, %arg5: tensor<5x2x4xf32>, %arg6: tensor<5x4x4xf32>, %arg7: tensor<5x2x4xf32>) -> tuple<tensor<i64>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<5x2x4xf32>, tensor<5x2xf32>, tensor<5x2x4xf32>, tensor<5x4x4xf32>, tensor<5x2x4xf32>> {
    %c = stablehlo.constant dense<0> : tensor<i64>
    %c_0 = stablehlo.constant dense<1> : tensor<i64>
    %c_1 = stablehlo.constant dense<5> : tensor<i64>
    %0:7 = stablehlo.while(%iterArg = %arg0, %iterArg_2 = %arg1, %iterArg_3 = %arg2, %iterArg_4 = %arg4, %iterArg_5 = %arg5, %iterArg_6 = %arg6, %iterArg_7 = %arg7) : tensor<i64>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<5x2xf32>, tensor<5x2x4xf32>, tensor<5x4x4xf32>, tensor<5x2x4xf32>
    cond {
      %2 = stablehlo.compare  LT, %iterArg, %c_1 : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = stablehlo.add %iterArg, %c_0 : tensor<i64>
      %3 = stablehlo.dynamic_slice %arg3, %iterArg, %c, %c, sizes = [1, 2, 4] : (tensor<5x2x4xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<1x2x4xf32>
      %4 = stablehlo.reshape %3 : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
      %5 = func.call @FnComputation.29(%4, %iterArg_3, %iterArg_2) {xla_shape = "(f32[2,4]{1,0}, f32[4,4]{1,0}, f32[2]{0}, f32[2,4]{1,0}, f32[4,4]{1,0}, /*index=5*/f32[2,4]{1,0})"} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>) -> tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>>
      %6 = stablehlo.get_tuple_element %5[0] : (tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4xf32>
      %7 = stablehlo.get_tuple_element %5[1] : (tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>>) -> tensor<4x4xf32>
      %8 = stablehlo.get_tuple_element %5[2] : (tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>>) -> tensor<2xf32>
      %9 = stablehlo.reshape %8 : (tensor<2xf32>) -> tensor<1x2xf32>
      %10 = stablehlo.dynamic_update_slice %iterArg_4, %9, %iterArg, %c : (tensor<5x2xf32>, tensor<1x2xf32>, tensor<i64>, tensor<i64>) -> tensor<5x2xf32>
      %11 = stablehlo.get_tuple_element %5[3] : (tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4xf32>
      %12 = stablehlo.reshape %11 : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
      %13 = stablehlo.dynamic_update_slice %iterArg_5, %12, %iterArg, %c, %c : (tensor<5x2x4xf32>, tensor<1x2x4xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<5x2x4xf32>
      %14 = stablehlo.get_tuple_element %5[4] : (tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>>) -> tensor<4x4xf32>
      %15 = stablehlo.reshape %14 : (tensor<4x4xf32>) -> tensor<1x4x4xf32>
      %16 = stablehlo.dynamic_update_slice %iterArg_6, %15, %iterArg, %c, %c : (tensor<5x4x4xf32>, tensor<1x4x4xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<5x4x4xf32>
      %17 = stablehlo.get_tuple_element %5[5] : (tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4xf32>
      %18 = stablehlo.reshape %17 : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
      %19 = stablehlo.dynamic_update_slice %iterArg_7, %18, %iterArg, %c, %c : (tensor<5x2x4xf32>, tensor<1x2x4xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<5x2x4xf32>
      stablehlo.return %2, %6, %7, %10, %13, %16, %19 : tensor<i64>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<5x2xf32>, tensor<5x2x4xf32>, tensor<5x4x4xf32>, tensor<5x2x4xf32>
    }
    %1 = stablehlo.tuple %0#0, %0#1, %0#2, %arg3, %0#3, %0#4, %0#5, %0#6 {xla_shape = "(s64[], f32[2,4]{1,0}, f32[4,4]{1,0}, f32[5,2,4]{2,1,0}, f32[5,2]{1,0}, /*index=5*/f32[5,2,4]{2,1,0}, f32[5,4,4]{2,1,0}, f32[5,2,4]{2,1,0})"} : tuple<tensor<i64>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<5x2x4xf32>, tensor<5x2xf32>, tensor<5x2x4xf32>, tensor<5x4x4xf32>, tensor<5x2x4xf32>>
    return %1 : tuple<tensor<i64>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<5x2x4xf32>, tensor<5x2xf32>, tensor<5x2x4xf32>, tensor<5x4x4xf32>, tensor<5x2x4xf32>>
  }
  func.func private @FnComputation.29(%arg0: tensor<2x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<2x4xf32>) -> tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.dot_general %arg2, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %1 = stablehlo.add %0, %arg0 : tensor<2x4xf32>
    %2 = stablehlo.tanh %1 : tensor<2x4xf32>
    %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %4 = stablehlo.tuple %2, %arg1, %3, %arg2, %arg1, %2 {xla_shape = "(f32[2,4]{1,0}, f32[4,4]{1,0}, f32[2]{0}, f32[2,4]{1,0}, f32[4,4]{1,0}, /*index=5*/f32[2,4]{1,0})"} : tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>>
    return %4 : tuple<tensor<2x4xf32>, tensor<4x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>>
  }
}
