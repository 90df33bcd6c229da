// Hand-written tests in the format of StableHLO's interpreter suite, one module per chunk.
// Every argument-less function that nothing calls is a test.

func.func @integer_sum() {
  %a = stablehlo.constant dense<[3, -7, 120]> : tensor<3xi8>
  %b = stablehlo.constant dense<[4, 2, 10]> : tensor<3xi8>
  %sum = stablehlo.add %a, %b : tensor<3xi8>
  check.expect_eq_const %sum, dense<[7, -5, -126]> : tensor<3xi8>
  func.return
}

// -----

func.func @two_values_equal() {
  %x = stablehlo.constant dense<[[1.5, -0.0], [0x7FC00000, 2.0]]> : tensor<2x2xf32>
  %y = stablehlo.negate %x : tensor<2x2xf32>
  %z = stablehlo.negate %y : tensor<2x2xf32>
  check.expect_eq %z, %x : tensor<2x2xf32>
  func.return
}

// -----

func.func @almost_with_default_tolerance() {
  %x = stablehlo.constant dense<[0.25, 1.0]> : tensor<2xf64>
  %y = stablehlo.sqrt %x : tensor<2xf64>
  check.expect_almost_eq_const %y, dense<[0.50001, 1.0]> : tensor<2xf64>
  check.expect_almost_eq_const %y, dense<[0.51, 0.99]> : tensor<2xf64>, tolerance = 2.0e-2
  check.expect_almost_eq_const %y, dense<[0.505, 1.0]> : tensor<2xf64> {tolerance = 1.0e-2 : f64}
  func.return
}

// -----

func.func @almost_two_operands() {
  %x = stablehlo.constant dense<(1.0, -2.0)> : tensor<complex<f32>>
  %y = stablehlo.constant dense<(1.00001, -2.0)> : tensor<complex<f32>>
  check.expect_almost_eq %x, %y : tensor<complex<f32>>
  check.expect_almost_eq %x, %y, tolerance = 1.0e-3 : tensor<complex<f32>>
  func.return
}

// -----

func.func @close_in_ulps() {
  %x = stablehlo.constant dense<[1.0, 3.0e+38, 0xFF800000]> : tensor<3xf32>
  // 1 + 2^-22 is two ULPs above 1; the largest finite float is one ULP above 3.4028233e38
  %y = stablehlo.constant dense<[1.00000024, 3.0e+38, 0xFF800000]> : tensor<3xf32>
  check.expect_close %x, %y, max_ulp_difference = 2 : tensor<3xf32>, tensor<3xf32>
  check.expect_close %x, %y, max_ulp_difference = 2, min_ulp_difference = 0 : tensor<3xf32>, tensor<3xf32>
  func.return
}

// -----

module @several_tests {
  func.func private @double(%arg0: tensor<4xui16>) -> tensor<4xui16> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xui16>
    func.return %0 : tensor<4xui16>
  }
  func.func @first() {
    %c = stablehlo.constant dense<[0, 1, 32768, 65535]> : tensor<4xui16>
    %r = func.call @double(%c) : (tensor<4xui16>) -> tensor<4xui16>
    check.expect_eq_const %r, dense<[0, 2, 0, 65534]> : tensor<4xui16>
    func.return
  }
  func.func @second() {
    %c = stablehlo.constant dense<true> : tensor<2xi1>
    %n = stablehlo.not %c : tensor<2xi1>
    check.expect_eq_const %n, dense<false> : tensor<2xi1>
    func.return
  }
}

// -----

func.func @probe_then_compare() {
  %x = stablehlo.constant dense<[2, 3]> : tensor<2xi32>
  %y = stablehlo.multiply %x, %x : tensor<2xi32>
  %p = interpreter.probe %y, probe_id = "squares" : tensor<2xi32>
  %shown = interpreter.print %p : tensor<2xi32>
  %expected = stablehlo.constant dense<[4, 9]> : tensor<2xi32>
  check.expect_serialized_eq %expected, probe_id = "squares" : tensor<2xi32>
  check.expect_serialized_eq %expected, probe_id = "squares", iter = 0 : tensor<2xi32>
  check.expect_eq_const %shown, dense<[4, 9]> : tensor<2xi32>
  func.return
}
