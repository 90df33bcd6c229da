// Quantized tensors (!quant.uniform): stored as integers, ops computed as dequantize -> op ->
// quantize; expected values worked out by hand from the specification.

func.func @uniform_quantize_clamp() {
  %operand = stablehlo.constant dense<[-100.0, 100.0, 0.26]> : tensor<3xf32>
  %q = stablehlo.uniform_quantize %operand : (tensor<3xf32>) -> tensor<3x!quant.uniform<i8:f32, 0.5>>
  %r = stablehlo.uniform_dequantize %q : (tensor<3x!quant.uniform<i8:f32, 0.5>>) -> tensor<3xf32>
  check.expect_eq_const %r, dense<[-64.0, 63.5, 0.5]> : tensor<3xf32>
  func.return
}

// -----

func.func @per_axis_quantize() {
  %operand = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %q = stablehlo.uniform_quantize %operand : (tensor<2x2xf32>) -> tensor<2x2x!quant.uniform<i8:f32:1, {0.5:0, 2.0:1}>>
  %r = stablehlo.uniform_dequantize %q : (tensor<2x2x!quant.uniform<i8:f32:1, {0.5:0, 2.0:1}>>) -> tensor<2x2xf32>
  check.expect_eq_const %r, dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  func.return
}

// -----

func.func @requantize() {
  %operand = stablehlo.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %q = stablehlo.uniform_quantize %operand : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5:0>>
  %q2 = stablehlo.uniform_quantize %q : (tensor<2x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<2x!quant.uniform<i8:f32, 1.0:1>>
  %r = stablehlo.uniform_dequantize %q2 : (tensor<2x!quant.uniform<i8:f32, 1.0:1>>) -> tensor<2xf32>
  check.expect_eq_const %r, dense<[1.0, 3.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @quantized_dot_general() {
  %a = stablehlo.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %b = stablehlo.constant dense<[[1.0], [1.0]]> : tensor<2x1xf32>
  %qa = stablehlo.uniform_quantize %a : (tensor<1x2xf32>) -> tensor<1x2x!quant.uniform<i8:f32, 1.0:0>>
  %qb = stablehlo.uniform_quantize %b : (tensor<2x1xf32>) -> tensor<2x1x!quant.uniform<i8:f32, 1.0:0>>
  %qc = stablehlo.dot_general %qa, %qb, contracting_dims = [1] x [0] : (tensor<1x2x!quant.uniform<i8:f32, 1.0:0>>, tensor<2x1x!quant.uniform<i8:f32, 1.0:0>>) -> tensor<1x1x!quant.uniform<i32:f32, 1.0:0>>
  %c = stablehlo.uniform_dequantize %qc : (tensor<1x1x!quant.uniform<i32:f32, 1.0:0>>) -> tensor<1x1xf32>
  check.expect_eq_const %c, dense<[[3.0]]> : tensor<1x1xf32>
  func.return
}

// -----

func.func @quantized_constant() {
  %0 = stablehlo.constant() {value = dense<[10, 20]> : tensor<2xi8>} : () -> tensor<2x!quant.uniform<i8:f32, 0.5:4>>
  %1 = stablehlo.uniform_dequantize %0 : (tensor<2x!quant.uniform<i8:f32, 0.5:4>>) -> tensor<2xf32>
  check.expect_eq_const %1, dense<[3.0, 8.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @quantized_saturating_add() {
  %a = stablehlo.constant dense<[60.0, -60.0]> : tensor<2xf32>
  %qa = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  %s = stablehlo.add %qa, %qa : tensor<2x!quant.uniform<i8:f32, 0.5>>
  %r = stablehlo.uniform_dequantize %s : (tensor<2x!quant.uniform<i8:f32, 0.5>>) -> tensor<2xf32>
  check.expect_eq_const %r, dense<[63.5, -64.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @quantized_transpose_per_axis() {
  %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %q = stablehlo.uniform_quantize %a : (tensor<2x2xf32>) -> tensor<2x2x!quant.uniform<i8:f32:1, {0.5:0, 0.25:0}>>
  %t = stablehlo.transpose %q, dims = [1, 0] : (tensor<2x2x!quant.uniform<i8:f32:1, {0.5:0, 0.25:0}>>) -> tensor<2x2x!quant.uniform<i8:f32:0, {0.5:0, 0.25:0}>>
  %r = stablehlo.uniform_dequantize %t : (tensor<2x2x!quant.uniform<i8:f32:0, {0.5:0, 0.25:0}>>) -> tensor<2x2xf32>
  check.expect_eq_const %r, dense<[[1.0, 3.0], [2.0, 4.0]]> : tensor<2x2xf32>
  func.return
}

// -----

func.func @quantized_while_carry() {
  %a = stablehlo.constant dense<1.0> : tensor<f32>
  %q = stablehlo.uniform_quantize %a : (tensor<f32>) -> tensor<!quant.uniform<i8:f32, 0.25>>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %r:2 = stablehlo.while(%i = %i0, %x = %q) : tensor<i32>, tensor<!quant.uniform<i8:f32, 0.25>>
  cond {
    %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %y = stablehlo.add %x, %x : tensor<!quant.uniform<i8:f32, 0.25>>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j, %y : tensor<i32>, tensor<!quant.uniform<i8:f32, 0.25>>
  }
  %d = stablehlo.uniform_dequantize %r#1 : (tensor<!quant.uniform<i8:f32, 0.25>>) -> tensor<f32>
  check.expect_eq_const %d, dense<8.0> : tensor<f32>
  func.return
}

// -----

func.func @quantized_reduce() {
  %a = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %q = stablehlo.uniform_quantize %a : (tensor<3xf32>) -> tensor<3x!quant.uniform<i8:f32, 0.5>>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %qz = stablehlo.uniform_quantize %z : (tensor<f32>) -> tensor<!quant.uniform<i8:f32, 0.5>>
  %r = stablehlo.reduce(%q init: %qz) applies stablehlo.add across dimensions = [0] : (tensor<3x!quant.uniform<i8:f32, 0.5>>, tensor<!quant.uniform<i8:f32, 0.5>>) -> tensor<!quant.uniform<i8:f32, 0.5>>
  %d = stablehlo.uniform_dequantize %r : (tensor<!quant.uniform<i8:f32, 0.5>>) -> tensor<f32>
  check.expect_eq_const %d, dense<6.0> : tensor<f32>
  func.return
}

// -----

func.func @quantized_u8_storage_range() {
  %a = stablehlo.constant dense<[-1.0, 0.0, 300.0]> : tensor<3xf32>
  %q = stablehlo.uniform_quantize %a : (tensor<3xf32>) -> tensor<3x!quant.uniform<ui8<0:200>:f32, 1.0:10>>
  %d = stablehlo.uniform_dequantize %q : (tensor<3x!quant.uniform<ui8<0:200>:f32, 1.0:10>>) -> tensor<3xf32>
  check.expect_eq_const %d, dense<[-1.0, 0.0, 190.0]> : tensor<3xf32>
  func.return
}

// -----

func.func @quantized_compare() {
  %a = stablehlo.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %qa = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  %qb = stablehlo.uniform_quantize %b : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.25:3>>
  %c = stablehlo.compare LT, %qa, %qb, FLOAT : (tensor<2x!quant.uniform<i8:f32, 0.5>>, tensor<2x!quant.uniform<i8:f32, 0.25:3>>) -> tensor<2xi1>
  check.expect_eq_const %c, dense<[true, false]> : tensor<2xi1>
  func.return
}
