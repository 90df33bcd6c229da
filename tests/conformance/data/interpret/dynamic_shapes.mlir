// Values of dynamic types (tensor<?x...>) inside a test: their sizes come from the constants
// the shape operands are made of, known when the test is traced.

func.func @dynamic_results_from_constant_shapes() {
  %operand = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %shape = stablehlo.constant dense<[3, 2]> : tensor<2xi64>
  %b = stablehlo.dynamic_broadcast_in_dim %operand, %shape, dims = [1] : (tensor<2xi32>, tensor<2xi64>) -> tensor<?x?xi32>
  %s = stablehlo.add %b, %b : tensor<?x?xi32>
  %n = stablehlo.get_dimension_size %s, dim = 0 : (tensor<?x?xi32>) -> tensor<i32>
  check.expect_eq_const %n, dense<3> : tensor<i32>
  %flat = stablehlo.constant dense<[6]> : tensor<1xi64>
  %r = stablehlo.dynamic_reshape %s, %flat : (tensor<?x?xi32>, tensor<1xi64>) -> tensor<?xi32>
  %c = tensor.cast %r : tensor<?xi32> to tensor<6xi32>
  check.expect_eq_const %c, dense<[2, 4, 2, 4, 2, 4]> : tensor<6xi32>
  %i = stablehlo.dynamic_iota %flat, dim = 0 : (tensor<1xi64>) -> tensor<?xi32>
  %e = stablehlo.constant dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi32>
  %ed = stablehlo.convert %e : (tensor<6xi32>) -> tensor<?xi32>
  check.expect_eq %i, %ed : tensor<?xi32>
  func.return
}
