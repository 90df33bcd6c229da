module @IrToHlo.246 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<2x4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<f32>, %arg3: tensor<f32>) -> (tensor<2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>) {
    %cst = stablehlo.constant dense<-1.000000e+00> : tensor<2xf64>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<2x3xf32>
    %cst_1 = stablehlo.constant dense<-1.000000e+00> : tensor<2x3xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<2x3xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<2x4x4xf32>
    %c = stablehlo.constant dense<-1> : tensor<4xi32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.iota dim = 0 : tensor<4xi32>
    %1 = stablehlo.add %0, %c : tensor<4xi32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<4xi32>) -> tensor<4x4xi32>
    %3 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<4xi32>) -> tensor<4x4xi32>
    %4 = stablehlo.compare  GE, %2, %3 : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %5 = stablehlo.broadcast_in_dim %4, dims = [1, 2] : (tensor<4x4xi1>) -> tensor<2x4x4xi1>
    %6 = stablehlo.custom_call @Qr(%arg0) {backend_config = "", xla_shape = "(f32[2,4,4]{2,1,0}, f32[2,4]{1,0})"} : (tensor<2x4x4xf32>) -> tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>
    %7 = stablehlo.get_tuple_element %6[0] : (tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4x4xf32>
    %8 = stablehlo.select %5, %cst_3, %7 : tensor<2x4x4xi1>, tensor<2x4x4xf32>
    %9 = stablehlo.get_tuple_element %6[1] : (tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4xf32>
    %10 = stablehlo.custom_call @ProductOfElementaryHouseholderReflectors(%7, %9) {backend_config = ""} : (tensor<2x4x4xf32>, tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %11 = stablehlo.transpose %10, dims = [0, 2, 1] {result_layout = dense<[1, 2, 0]> : tensor<3xindex>, xla_shape = "f32[2,4,4]{1,2,0}"} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %12 = "stablehlo.triangular_solve"(%8, %11) <{left_side = true, lower = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> {result_layout = dense<[1, 2, 0]> : tensor<3xindex>, xla_shape = "f32[2,4,4]{1,2,0}"} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %13 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<4xi32>) -> tensor<2x4x4xi32>
    %14 = stablehlo.broadcast_in_dim %0, dims = [2] : (tensor<4xi32>) -> tensor<2x4x4xi32>
    %15 = stablehlo.compare  EQ, %13, %14 : (tensor<2x4x4xi32>, tensor<2x4x4xi32>) -> tensor<2x4x4xi1>
    %16 = stablehlo.select %15, %7, %cst_3 : tensor<2x4x4xi1>, tensor<2x4x4xf32>
    %17 = stablehlo.reduce(%16 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %18 = stablehlo.dot_general %cst_4, %17, contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] {mhlo.frontend_attributes = {grad_x = "false", grad_y = "false"}} : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %19 = stablehlo.sign %18 : tensor<2x4xf32>
    %20 = stablehlo.reduce(%19 init: %cst_4) applies stablehlo.multiply across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %21 = stablehlo.slice %9 [0:2, 0:3] : (tensor<2x4xf32>) -> tensor<2x3xf32>
    %22 = stablehlo.compare  NE, %21, %cst_2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %23 = stablehlo.select %22, %cst_1, %cst_0 : tensor<2x3xi1>, tensor<2x3xf32>
    %24 = stablehlo.reduce(%23 init: %cst_4) applies stablehlo.multiply across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %25 = stablehlo.multiply %20, %24 : tensor<2xf32>
    %26 = stablehlo.abs %7 : tensor<2x4x4xf32>
    %27 = stablehlo.log %26 : tensor<2x4x4xf32>
    %28 = stablehlo.select %15, %27, %cst_3 : tensor<2x4x4xi1>, tensor<2x4x4xf32>
    %29 = stablehlo.reduce(%28 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %30 = stablehlo.reduce(%29 init: %cst_5) applies stablehlo.add across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %31 = stablehlo.dot_general %cst_4, %30, contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] {mhlo.frontend_attributes = {grad_x = "false", grad_y = "false"}} : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
    %32 = stablehlo.transpose %arg0, dims = [0, 2, 1] {result_layout = dense<[1, 2, 0]> : tensor<3xindex>, xla_shape = "f32[2,4,4]{1,2,0}"} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %33 = stablehlo.dot_general %arg0, %32, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %34 = stablehlo.iota dim = 0 : tensor<4xui32>
    %35 = stablehlo.broadcast_in_dim %34, dims = [0] : (tensor<4xui32>) -> tensor<4x4xui32>
    %36 = stablehlo.broadcast_in_dim %34, dims = [1] : (tensor<4xui32>) -> tensor<4x4xui32>
    %37 = stablehlo.compare  EQ, %35, %36 : (tensor<4x4xui32>, tensor<4x4xui32>) -> tensor<4x4xi1>
    %38 = stablehlo.convert %37 : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %39 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %40 = stablehlo.multiply %38, %39 : tensor<4x4xf32>
    %41 = stablehlo.broadcast_in_dim %40, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<2x4x4xf32>
    %42 = stablehlo.add %33, %41 : tensor<2x4x4xf32>
    %43 = stablehlo.transpose %arg1, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[4,4]{0,1}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %44 = stablehlo.multiply %arg1, %43 : tensor<4x4xf32>
    %45 = stablehlo.broadcast_in_dim %44, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<2x4x4xf32>
    %46 = stablehlo.add %42, %45 : tensor<2x4x4xf32>
    %47 = stablehlo.custom_call @Qr(%46) {backend_config = "", xla_shape = "(f32[2,4,4]{2,1,0}, f32[2,4]{1,0})"} : (tensor<2x4x4xf32>) -> tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>
    %48 = stablehlo.get_tuple_element %47[0] : (tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4x4xf32>
    %49 = stablehlo.select %15, %48, %cst_3 : tensor<2x4x4xi1>, tensor<2x4x4xf32>
    %50 = stablehlo.reduce(%49 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %51 = stablehlo.dot_general %cst_4, %50, contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] {mhlo.frontend_attributes = {grad_x = "false", grad_y = "false"}} : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %52 = stablehlo.sign %51 : tensor<2x4xf32>
    %53 = stablehlo.reduce(%52 init: %cst_4) applies stablehlo.multiply across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %54 = stablehlo.get_tuple_element %47[1] : (tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4xf32>
    %55 = stablehlo.slice %54 [0:2, 0:3] : (tensor<2x4xf32>) -> tensor<2x3xf32>
    %56 = stablehlo.compare  NE, %55, %cst_2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %57 = stablehlo.select %56, %cst_1, %cst_0 : tensor<2x3xi1>, tensor<2x3xf32>
    %58 = stablehlo.reduce(%57 init: %cst_4) applies stablehlo.multiply across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %59 = stablehlo.multiply %53, %58 : tensor<2xf32>
    %60 = stablehlo.convert %59 : (tensor<2xf32>) -> tensor<2xf64>
    %61 = stablehlo.compare  EQ, %60, %cst : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xi1>
    %62 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %63 = stablehlo.abs %48 : tensor<2x4x4xf32>
    %64 = stablehlo.log %63 : tensor<2x4x4xf32>
    %65 = stablehlo.select %15, %64, %cst_3 : tensor<2x4x4xi1>, tensor<2x4x4xf32>
    %66 = stablehlo.reduce(%65 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %67 = stablehlo.reduce(%66 init: %cst_5) applies stablehlo.add across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %68 = stablehlo.dot_general %cst_4, %67, contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] {mhlo.frontend_attributes = {grad_x = "false", grad_y = "false"}} : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
    %69 = stablehlo.select %61, %62, %68 : tensor<2xi1>, tensor<2xf32>
    %70 = stablehlo.custom_call @Eigh(%42) {backend_config = "1,1,100,0.000001", xla_shape = "(f32[2,4,4]{2,1,0}, f32[2,4]{1,0})"} : (tensor<2x4x4xf32>) -> tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>
    %71 = stablehlo.get_tuple_element %70[1] : (tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4xf32>
    %72 = stablehlo.get_tuple_element %70[0] : (tuple<tensor<2x4x4xf32>, tensor<2x4xf32>>) -> tensor<2x4x4xf32>
    %73 = stablehlo.abs %72 : tensor<2x4x4xf32>
    return %12, %25, %31, %69, %71, %73 : tensor<2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>
  }
}
