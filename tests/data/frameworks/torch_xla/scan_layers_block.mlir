!tuple = tuple<tensor<i64>, tensor<3x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x1x3x8xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x8x16xf32>, tensor<4x3x16xf32>, tensor<4x3x16xf32>, tensor<4x16x8xf32>>
module @IrToHlo.386 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<8xf32>, %arg3: tensor<8xf32>, %arg4: tensor<8x16xf32>, %arg5: tensor<8x16xf32>, %arg6: tensor<8x16xf32>, %arg7: tensor<8x16xf32>, %arg8: tensor<16xf32>, %arg9: tensor<16xf32>, %arg10: tensor<16xf32>, %arg11: tensor<16xf32>, %arg12: tensor<16x8xf32>, %arg13: tensor<16x8xf32>, %arg14: tensor<16x8xf32>, %arg15: tensor<16x8xf32>, %arg16: tensor<8xf32>, %arg17: tensor<8xf32>, %arg18: tensor<8xf32>, %arg19: tensor<8xf32>, %arg20: tensor<8xf32>, %arg21: tensor<8xf32>, %arg22: tensor<8xf32>, %arg23: tensor<8xf32>, %arg24: tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<3xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<4x16x8xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<4x3x16xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<4x8x16xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<4x3x8xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<4x3xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<4x1x3x8xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i64>
    %0 = stablehlo.reshape %arg23 : (tensor<8xf32>) -> tensor<1x8xf32>
    %1 = stablehlo.reshape %arg22 : (tensor<8xf32>) -> tensor<1x8xf32>
    %2 = stablehlo.reshape %arg21 : (tensor<8xf32>) -> tensor<1x8xf32>
    %3 = stablehlo.reshape %arg20 : (tensor<8xf32>) -> tensor<1x8xf32>
    %4 = stablehlo.concatenate %0, %1, %2, %3, dim = 0 : (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
    %5 = stablehlo.reshape %arg19 : (tensor<8xf32>) -> tensor<1x8xf32>
    %6 = stablehlo.reshape %arg18 : (tensor<8xf32>) -> tensor<1x8xf32>
    %7 = stablehlo.reshape %arg17 : (tensor<8xf32>) -> tensor<1x8xf32>
    %8 = stablehlo.reshape %arg16 : (tensor<8xf32>) -> tensor<1x8xf32>
    %9 = stablehlo.concatenate %5, %6, %7, %8, dim = 0 : (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
    %10 = stablehlo.reshape %arg15 : (tensor<16x8xf32>) -> tensor<1x16x8xf32>
    %11 = stablehlo.reshape %arg14 : (tensor<16x8xf32>) -> tensor<1x16x8xf32>
    %12 = stablehlo.reshape %arg13 : (tensor<16x8xf32>) -> tensor<1x16x8xf32>
    %13 = stablehlo.reshape %arg12 : (tensor<16x8xf32>) -> tensor<1x16x8xf32>
    %14 = stablehlo.concatenate %10, %11, %12, %13, dim = 0 : (tensor<1x16x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>) -> tensor<4x16x8xf32>
    %15 = stablehlo.reshape %arg11 : (tensor<16xf32>) -> tensor<1x16xf32>
    %16 = stablehlo.reshape %arg10 : (tensor<16xf32>) -> tensor<1x16xf32>
    %17 = stablehlo.reshape %arg9 : (tensor<16xf32>) -> tensor<1x16xf32>
    %18 = stablehlo.reshape %arg8 : (tensor<16xf32>) -> tensor<1x16xf32>
    %19 = stablehlo.concatenate %15, %16, %17, %18, dim = 0 : (tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
    %20 = stablehlo.reshape %arg7 : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %21 = stablehlo.reshape %arg6 : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %22 = stablehlo.reshape %arg5 : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %23 = stablehlo.reshape %arg4 : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %24 = stablehlo.concatenate %20, %21, %22, %23, dim = 0 : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<4x8x16xf32>
    %25 = stablehlo.reshape %arg3 : (tensor<8xf32>) -> tensor<1x8xf32>
    %26 = stablehlo.reshape %arg2 : (tensor<8xf32>) -> tensor<1x8xf32>
    %27 = stablehlo.reshape %arg1 : (tensor<8xf32>) -> tensor<1x8xf32>
    %28 = stablehlo.reshape %arg0 : (tensor<8xf32>) -> tensor<1x8xf32>
    %29 = stablehlo.concatenate %25, %26, %27, %28, dim = 0 : (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
    %30 = call @scan.340(%c, %arg24, %4, %9, %14, %19, %24, %29, %cst_4, %cst_3, %cst_3, %cst_2, %cst_2, %cst_1, %cst_0, %cst_0, %cst) {xla_shape = "(s64[], f32[3,8]{1,0}, f32[4,8]{1,0}, f32[4,8]{1,0}, f32[4,16,8]{2,1,0}, /*index=5*/f32[4,16]{1,0}, f32[4,8,16]{2,1,0}, f32[4,8]{1,0}, f32[4,1,3,8]{3,2,1,0}, f32[4,3]{1,0}, /*index=10*/f32[4,3]{1,0}, f32[4,3,8]{2,1,0}, f32[4,3,8]{2,1,0}, f32[4,8,16]{2,1,0}, f32[4,3,16]{2,1,0}, /*index=15*/f32[4,3,16]{2,1,0}, f32[4,16,8]{2,1,0})"} : (tensor<i64>, tensor<3x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x1x3x8xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x8x16xf32>, tensor<4x3x16xf32>, tensor<4x3x16xf32>, tensor<4x16x8xf32>) -> !tuple
    %31 = stablehlo.get_tuple_element %30[1] : (!tuple) -> tensor<3x8xf32>
    %32 = stablehlo.reduce(%31 init: %cst_5) applies stablehlo.add across dimensions = [1] : (tensor<3x8xf32>, tensor<f32>) -> tensor<3xf32>
    return %31, %32 : tensor<3x8xf32>, tensor<3xf32>
  }
  func.func private @scan.340(%arg0: tensor<i64>, %arg1: tensor<3x8xf32>, %arg2: tensor<4x8xf32>, %arg3: tensor<4x8xf32>, %arg4: tensor<4x16x8xf32>, %arg5: tensor<4x16xf32>, %arg6: tensor<4x8x16xf32>, %arg7: tensor<4x8xf32>, %arg8: tensor<4x1x3x8xf32>, %arg9: tensor<4x3xf32>, %arg10: tensor<4x3xf32>, %arg11: tensor<4x3x8xf32>, %arg12: tensor<4x3x8xf32>, %arg13: tensor<4x8x16xf32>, %arg14: tensor<4x3x16xf32>, %arg15: tensor<4x3x16xf32>, %arg16: tensor<4x16x8xf32>) -> !tuple {
    %c = stablehlo.constant dense<0> : tensor<i64>
    %c_0 = stablehlo.constant dense<1> : tensor<i64>
    %c_1 = stablehlo.constant dense<4> : tensor<i64>
    %0:11 = stablehlo.while(%iterArg = %arg0, %iterArg_2 = %arg1, %iterArg_3 = %arg8, %iterArg_4 = %arg9, %iterArg_5 = %arg10, %iterArg_6 = %arg11, %iterArg_7 = %arg12, %iterArg_8 = %arg13, %iterArg_9 = %arg14, %iterArg_10 = %arg15, %iterArg_11 = %arg16) : tensor<i64>, tensor<3x8xf32>, tensor<4x1x3x8xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x8x16xf32>, tensor<4x3x16xf32>, tensor<4x3x16xf32>, tensor<4x16x8xf32>
    cond {
      %2 = stablehlo.compare  LT, %iterArg, %c_1 : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = stablehlo.add %iterArg, %c_0 : tensor<i64>
      %3 = stablehlo.dynamic_slice %arg7, %iterArg, %c, sizes = [1, 8] : (tensor<4x8xf32>, tensor<i64>, tensor<i64>) -> tensor<1x8xf32>
      %4 = stablehlo.reshape %3 : (tensor<1x8xf32>) -> tensor<8xf32>
      %5 = stablehlo.dynamic_slice %arg6, %iterArg, %c, %c, sizes = [1, 8, 16] : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<1x8x16xf32>
      %6 = stablehlo.reshape %5 : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
      %7 = stablehlo.dynamic_slice %arg5, %iterArg, %c, sizes = [1, 16] : (tensor<4x16xf32>, tensor<i64>, tensor<i64>) -> tensor<1x16xf32>
      %8 = stablehlo.reshape %7 : (tensor<1x16xf32>) -> tensor<16xf32>
      %9 = stablehlo.dynamic_slice %arg4, %iterArg, %c, %c, sizes = [1, 16, 8] : (tensor<4x16x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<1x16x8xf32>
      %10 = stablehlo.reshape %9 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
      %11 = stablehlo.dynamic_slice %arg2, %iterArg, %c, sizes = [1, 8] : (tensor<4x8xf32>, tensor<i64>, tensor<i64>) -> tensor<1x8xf32>
      %12 = stablehlo.reshape %11 : (tensor<1x8xf32>) -> tensor<8xf32>
      %13 = stablehlo.dynamic_slice %arg3, %iterArg, %c, sizes = [1, 8] : (tensor<4x8xf32>, tensor<i64>, tensor<i64>) -> tensor<1x8xf32>
      %14 = stablehlo.reshape %13 : (tensor<1x8xf32>) -> tensor<8xf32>
      %15 = func.call @FnComputation.102(%4, %6, %8, %10, %12, %iterArg_2, %14) {result_layout = [dense<[1, 0]> : tensor<2xindex>, dense<[2, 1, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], xla_shape = "(f32[3,8]{1,0}, f32[1,3,8]{2,1,0}, f32[3]{0}, f32[3]{0}, f32[3,8]{1,0}, /*index=5*/f32[3,8]{1,0}, f32[8,16]{0,1}, f32[3,16]{1,0}, f32[3,16]{1,0}, f32[16,8]{0,1})"} : (tensor<8xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<3x8xf32>, tensor<8xf32>) -> tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>
      %16 = stablehlo.get_tuple_element %15[0] : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<3x8xf32>
      %17 = stablehlo.get_tuple_element %15[1] : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<1x3x8xf32>
      %18 = stablehlo.reshape %17 : (tensor<1x3x8xf32>) -> tensor<1x1x3x8xf32>
      %19 = stablehlo.dynamic_update_slice %iterArg_3, %18, %iterArg, %c, %c, %c : (tensor<4x1x3x8xf32>, tensor<1x1x3x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x1x3x8xf32>
      %20 = stablehlo.get_tuple_element %15[2] : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<3xf32>
      %21 = stablehlo.reshape %20 : (tensor<3xf32>) -> tensor<1x3xf32>
      %22 = stablehlo.dynamic_update_slice %iterArg_4, %21, %iterArg, %c : (tensor<4x3xf32>, tensor<1x3xf32>, tensor<i64>, tensor<i64>) -> tensor<4x3xf32>
      %23 = stablehlo.get_tuple_element %15[3] : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<3xf32>
      %24 = stablehlo.reshape %23 : (tensor<3xf32>) -> tensor<1x3xf32>
      %25 = stablehlo.dynamic_update_slice %iterArg_5, %24, %iterArg, %c : (tensor<4x3xf32>, tensor<1x3xf32>, tensor<i64>, tensor<i64>) -> tensor<4x3xf32>
      %26 = stablehlo.get_tuple_element %15[4] : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<3x8xf32>
      %27 = stablehlo.reshape %26 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
      %28 = stablehlo.dynamic_update_slice %iterArg_6, %27, %iterArg, %c, %c : (tensor<4x3x8xf32>, tensor<1x3x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x3x8xf32>
      %29 = stablehlo.get_tuple_element %15[5] : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<3x8xf32>
      %30 = stablehlo.reshape %29 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
      %31 = stablehlo.dynamic_update_slice %iterArg_7, %30, %iterArg, %c, %c : (tensor<4x3x8xf32>, tensor<1x3x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x3x8xf32>
      %32 = stablehlo.get_tuple_element %15[6] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[8,16]{0,1}"} : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<8x16xf32>
      %33 = stablehlo.reshape %32 : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
      %34 = stablehlo.dynamic_update_slice %iterArg_8, %33, %iterArg, %c, %c : (tensor<4x8x16xf32>, tensor<1x8x16xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
      %35 = stablehlo.get_tuple_element %15[7] : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<3x16xf32>
      %36 = stablehlo.reshape %35 : (tensor<3x16xf32>) -> tensor<1x3x16xf32>
      %37 = stablehlo.dynamic_update_slice %iterArg_9, %36, %iterArg, %c, %c : (tensor<4x3x16xf32>, tensor<1x3x16xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x3x16xf32>
      %38 = stablehlo.get_tuple_element %15[8] : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<3x16xf32>
      %39 = stablehlo.reshape %38 : (tensor<3x16xf32>) -> tensor<1x3x16xf32>
      %40 = stablehlo.dynamic_update_slice %iterArg_10, %39, %iterArg, %c, %c : (tensor<4x3x16xf32>, tensor<1x3x16xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x3x16xf32>
      %41 = stablehlo.get_tuple_element %15[9] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>) -> tensor<16x8xf32>
      %42 = stablehlo.reshape %41 : (tensor<16x8xf32>) -> tensor<1x16x8xf32>
      %43 = stablehlo.dynamic_update_slice %iterArg_11, %42, %iterArg, %c, %c : (tensor<4x16x8xf32>, tensor<1x16x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x16x8xf32>
      stablehlo.return %2, %16, %19, %22, %25, %28, %31, %34, %37, %40, %43 : tensor<i64>, tensor<3x8xf32>, tensor<4x1x3x8xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x8x16xf32>, tensor<4x3x16xf32>, tensor<4x3x16xf32>, tensor<4x16x8xf32>
    }
    %1 = stablehlo.tuple %0#0, %0#1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %0#2, %0#3, %0#4, %0#5, %0#6, %0#7, %0#8, %0#9, %0#10 {xla_shape = "(s64[], f32[3,8]{1,0}, f32[4,8]{1,0}, f32[4,8]{1,0}, f32[4,16,8]{2,1,0}, /*index=5*/f32[4,16]{1,0}, f32[4,8,16]{2,1,0}, f32[4,8]{1,0}, f32[4,1,3,8]{3,2,1,0}, f32[4,3]{1,0}, /*index=10*/f32[4,3]{1,0}, f32[4,3,8]{2,1,0}, f32[4,3,8]{2,1,0}, f32[4,8,16]{2,1,0}, f32[4,3,16]{2,1,0}, /*index=15*/f32[4,3,16]{2,1,0}, f32[4,16,8]{2,1,0})"} : !tuple
    return %1 : !tuple
  }
  func.func private @FnComputation.102(%arg0: tensor<8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<16x8xf32>, %arg4: tensor<8xf32>, %arg5: tensor<3x8xf32>, %arg6: tensor<8xf32>) -> tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>> {
    %cst = stablehlo.constant dense<9.99999974E-6> : tensor<3xf32>
    %cst_0 = stablehlo.constant dense<3.000000e+00> : tensor<3x16xf32>
    %cst_1 = stablehlo.constant dense<4.471500e-02> : tensor<3x16xf32>
    %cst_2 = stablehlo.constant dense<0.797884583> : tensor<3x16xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<3x16xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<3xf32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<3xf32>
    %cst_6 = stablehlo.constant dense<5.000000e-01> : tensor<3x16xf32>
    %0 = stablehlo.broadcast_in_dim %arg6, dims = [1] : (tensor<8xf32>) -> tensor<3x8xf32>
    %1 = stablehlo.reshape %arg5 : (tensor<3x8xf32>) -> tensor<1x3x8xf32>
    %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%1, %cst_5, %cst_4) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>)
    %2 = stablehlo.reshape %output : (tensor<1x3x8xf32>) -> tensor<3x8xf32>
    %3 = stablehlo.broadcast_in_dim %arg4, dims = [1] : (tensor<8xf32>) -> tensor<3x8xf32>
    %4 = stablehlo.multiply %2, %3 : tensor<3x8xf32>
    %5 = stablehlo.add %0, %4 : tensor<3x8xf32>
    %6 = stablehlo.transpose %arg3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[8,16]{0,1}"} : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %7 = stablehlo.dot_general %5, %6, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x8xf32>, tensor<8x16xf32>) -> tensor<3x16xf32>
    %8 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<16xf32>) -> tensor<3x16xf32>
    %9 = stablehlo.add %7, %8 : tensor<3x16xf32>
    %10 = stablehlo.multiply %9, %cst_6 : tensor<3x16xf32>
    %11 = stablehlo.power %9, %cst_0 : tensor<3x16xf32>
    %12 = stablehlo.multiply %11, %cst_1 : tensor<3x16xf32>
    %13 = stablehlo.add %9, %12 : tensor<3x16xf32>
    %14 = stablehlo.multiply %13, %cst_2 : tensor<3x16xf32>
    %15 = stablehlo.tanh %14 : tensor<3x16xf32>
    %16 = stablehlo.add %15, %cst_3 : tensor<3x16xf32>
    %17 = stablehlo.multiply %10, %16 : tensor<3x16xf32>
    %18 = stablehlo.transpose %arg1, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %19 = stablehlo.dot_general %17, %18, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x16xf32>, tensor<16x8xf32>) -> tensor<3x8xf32>
    %20 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<8xf32>) -> tensor<3x8xf32>
    %21 = stablehlo.add %19, %20 : tensor<3x8xf32>
    %22 = stablehlo.add %arg5, %21 : tensor<3x8xf32>
    %23 = stablehlo.add %batch_var, %cst : tensor<3xf32>
    %24 = stablehlo.rsqrt %23 : tensor<3xf32>
    %25 = stablehlo.tuple %22, %1, %batch_mean, %24, %2, %5, %6, %9, %17, %18 {result_layout = [dense<[1, 0]> : tensor<2xindex>, dense<[2, 1, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], xla_shape = "(f32[3,8]{1,0}, f32[1,3,8]{2,1,0}, f32[3]{0}, f32[3]{0}, f32[3,8]{1,0}, /*index=5*/f32[3,8]{1,0}, f32[8,16]{0,1}, f32[3,16]{1,0}, f32[3,16]{1,0}, f32[16,8]{0,1})"} : tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>
    return %25 : tuple<tensor<3x8xf32>, tensor<1x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<8x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>, tensor<16x8xf32>>
  }
}
