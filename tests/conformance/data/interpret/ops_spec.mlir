// Ops with attributes and regions, in the style of StableHLO's interpreter suite: constant
// inputs, results checked against values worked out from the specification.

func.func @while_with_captured_value() {
  %step = stablehlo.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %limit = stablehlo.constant dense<4> : tensor<i32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %acc0 = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %r:2 = stablehlo.while(%i = %i0, %acc = %acc0) : tensor<i32>, tensor<2xf32>
    cond {
      %c = stablehlo.compare LT, %i, %limit : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %j = stablehlo.add %i, %one : tensor<i32>
      %a = stablehlo.add %acc, %step : tensor<2xf32>
      stablehlo.return %j, %a : tensor<i32>, tensor<2xf32>
    }
  check.expect_eq_const %r#0, dense<4> : tensor<i32>
  check.expect_eq_const %r#1, dense<[3.0, -3.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @while_counting_down_data_dependent() {
  // halve until below 1: 100 -> 50 -> 25 -> 12 -> 6 -> 3 -> 1, six steps
  %x0 = stablehlo.constant dense<100> : tensor<i64>
  %n0 = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %r:2 = stablehlo.while(%x = %x0, %n = %n0) : tensor<i64>, tensor<i64>
    cond {
      %c = stablehlo.compare GT, %x, %one : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %h = stablehlo.shift_right_logical %x, %one : tensor<i64>
      %m = stablehlo.add %n, %one : tensor<i64>
      stablehlo.return %h, %m : tensor<i64>, tensor<i64>
    }
  check.expect_eq_const %r#0, dense<1> : tensor<i64>
  check.expect_eq_const %r#1, dense<6> : tensor<i64>
  func.return
}

// -----

func.func @if_with_captured_values() {
  %p = stablehlo.constant dense<false> : tensor<i1>
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi8>
  %b = stablehlo.constant dense<[127, -128]> : tensor<2xi8>
  %r = "stablehlo.if"(%p) ({
    stablehlo.return %a : tensor<2xi8>
  }, {
    %s = stablehlo.add %a, %b : tensor<2xi8>
    stablehlo.return %s : tensor<2xi8>
  }) : (tensor<i1>) -> tensor<2xi8>
  check.expect_eq_const %r, dense<[-128, -126]> : tensor<2xi8>
  func.return
}

// -----

func.func @case_index_out_of_range_runs_the_last_branch() {
  %x = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf64>
  %neg = stablehlo.constant dense<-3> : tensor<i32>
  %big = stablehlo.constant dense<3> : tensor<i32>
  %mid = stablehlo.constant dense<1> : tensor<i32>
  %r0 = "stablehlo.case"(%neg) ({
    stablehlo.return %x : tensor<2xf64>
  }, {
    %n = stablehlo.negate %x : tensor<2xf64>
    stablehlo.return %n : tensor<2xf64>
  }, {
    %m = stablehlo.multiply %x, %x : tensor<2xf64>
    stablehlo.return %m : tensor<2xf64>
  }) : (tensor<i32>) -> tensor<2xf64>
  %r1 = "stablehlo.case"(%big) ({
    stablehlo.return %x : tensor<2xf64>
  }, {
    %n = stablehlo.negate %x : tensor<2xf64>
    stablehlo.return %n : tensor<2xf64>
  }) : (tensor<i32>) -> tensor<2xf64>
  %r2 = "stablehlo.case"(%mid) ({
    stablehlo.return %x : tensor<2xf64>
  }, {
    %n = stablehlo.negate %x : tensor<2xf64>
    stablehlo.return %n : tensor<2xf64>
  }, {
    stablehlo.return %x : tensor<2xf64>
  }) : (tensor<i32>) -> tensor<2xf64>
  check.expect_eq_const %r0, dense<[2.25, 4.0]> : tensor<2xf64>
  check.expect_eq_const %r1, dense<[-1.5, 2.0]> : tensor<2xf64>
  check.expect_eq_const %r2, dense<[-1.5, 2.0]> : tensor<2xf64>
  func.return
}

// -----

func.func @reduce_two_inputs_argmin_first_on_ties() {
  %v = stablehlo.constant dense<[[3, 1, 1, 2], [0, 5, 0, 7]]> : tensor<2x4xi32>
  %i = stablehlo.iota dim = 1 : tensor<2x4xi32>
  %big = stablehlo.constant dense<2147483647> : tensor<i32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%v init: %big), (%i init: %zero) across dimensions = [1]
      : (tensor<2x4xi32>, tensor<2x4xi32>, tensor<i32>, tensor<i32>) -> (tensor<2xi32>, tensor<2xi32>)
    reducer(%a: tensor<i32>, %c: tensor<i32>) (%b: tensor<i32>, %d: tensor<i32>) {
      %lt = stablehlo.compare LT, %a, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %a, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %bl = stablehlo.compare LT, %b, %d : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %t = stablehlo.and %eq, %bl : tensor<i1>
      %take = stablehlo.or %lt, %t : tensor<i1>
      %v2 = stablehlo.select %take, %a, %c : tensor<i1>, tensor<i32>
      %i2 = stablehlo.select %take, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %v2, %i2 : tensor<i32>, tensor<i32>
    }
  check.expect_eq_const %r#0, dense<[1, 0]> : tensor<2xi32>
  check.expect_eq_const %r#1, dense<[1, 0]> : tensor<2xi32>
  func.return
}

// -----

func.func @sort_two_keys_lexicographic() {
  %k0 = stablehlo.constant dense<[2, 1, 2, 1, 0]> : tensor<5xi32>
  %k1 = stablehlo.constant dense<[0.5, 3.0, -1.0, 2.0, 9.0]> : tensor<5xf32>
  %p = stablehlo.constant dense<[10, 11, 12, 13, 14]> : tensor<5xui8>
  %r:3 = "stablehlo.sort"(%k0, %k1, %p) ({
  ^bb0(%a0: tensor<i32>, %b0: tensor<i32>, %a1: tensor<f32>, %b1: tensor<f32>, %c: tensor<ui8>, %d: tensor<ui8>):
    %eq = stablehlo.compare EQ, %a0, %b0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %lt1 = stablehlo.compare GT, %a1, %b1, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt0 = stablehlo.compare LT, %a0, %b0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %s = stablehlo.select %eq, %lt1, %lt0 : tensor<i1>, tensor<i1>
    stablehlo.return %s : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true}
      : (tensor<5xi32>, tensor<5xf32>, tensor<5xui8>) -> (tensor<5xi32>, tensor<5xf32>, tensor<5xui8>)
  check.expect_eq_const %r#0, dense<[0, 1, 1, 2, 2]> : tensor<5xi32>
  check.expect_eq_const %r#1, dense<[9.0, 3.0, 2.0, 0.5, -1.0]> : tensor<5xf32>
  check.expect_eq_const %r#2, dense<[14, 11, 13, 10, 12]> : tensor<5xui8>
  func.return
}

// -----

func.func @dynamic_slice_and_update_clamp_their_starts() {
  %x = stablehlo.constant dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]> : tensor<3x4xi16>
  %neg = stablehlo.constant dense<-5> : tensor<i64>
  %big = stablehlo.constant dense<9> : tensor<i64>
  %s = stablehlo.dynamic_slice %x, %big, %neg, sizes = [2, 2] : (tensor<3x4xi16>, tensor<i64>, tensor<i64>) -> tensor<2x2xi16>
  check.expect_eq_const %s, dense<[[4, 5], [8, 9]]> : tensor<2x2xi16>
  %u = stablehlo.constant dense<[[-1, -2, -3]]> : tensor<1x3xi16>
  %r = stablehlo.dynamic_update_slice %x, %u, %big, %big : (tensor<3x4xi16>, tensor<1x3xi16>, tensor<i64>, tensor<i64>) -> tensor<3x4xi16>
  check.expect_eq_const %r, dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, -1, -2, -3]]> : tensor<3x4xi16>
  func.return
}

// -----

func.func @gather_with_batching_dims() {
  %x = stablehlo.constant dense<[[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]]> : tensor<2x3x2xi32>
  %idx = stablehlo.constant dense<[[2, 0], [1, 7]]> : tensor<2x2xi32>
  %r = "stablehlo.gather"(%x, %idx) {
    dimension_numbers = #stablehlo.gather<
      offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0],
      start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>,
    slice_sizes = array<i64: 1, 1, 2>
  } : (tensor<2x3x2xi32>, tensor<2x2xi32>) -> tensor<2x2x2xi32>
  // batch 0 takes rows 2 and 0; batch 1 rows 1 and 7 (clamped to 2)
  check.expect_eq_const %r, dense<[[[5, 6], [1, 2]], [[9, 10], [11, 12]]]> : tensor<2x2x2xi32>
  func.return
}

// -----

func.func @scatter_skips_out_of_bounds_updates() {
  %x = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %idx = stablehlo.constant dense<[[1], [3], [-1], [1]]> : tensor<4x1xi32>
  %u = stablehlo.constant dense<[[10.0, 20.0], [30.0, 40.0], [50.0, 60.0], [0.5, 0.25]]> : tensor<4x2xf32>
  %r = "stablehlo.scatter"(%x, %idx, %u) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {
    scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>,
    indices_are_sorted = false, unique_indices = false
  } : (tensor<4xf32>, tensor<4x1xi32>, tensor<4x2xf32>) -> tensor<4xf32>
  // windows at 1 (twice) land; those at 3 and -1 straddle an edge and are skipped whole,
  // as XLA does (the specification would update their elements in bounds: 61, ..., 34)
  check.expect_eq_const %r, dense<[1.0, 12.5, 23.25, 4.0]> : tensor<4xf32>
  func.return
}

// -----

func.func @convolution_batch_group_count() {
  // batch 2 in 2 groups: output feature o takes its group's batch element
  %x = stablehlo.constant dense<[[[1.0, 2.0, 3.0]], [[10.0, 20.0, 30.0]]]> : tensor<2x1x3xf32>
  %w = stablehlo.constant dense<[[[1.0, 0.0]], [[1.0, 1.0]]]> : tensor<2x1x2xf32>
  %r = stablehlo.convolution(%x, %w)
      dim_numbers = [b, f, 0]x[0, i, o]->[b, f, 0],
      window = {stride = [1], pad = [[0, 0]]}
      {batch_group_count = 2 : i64, feature_group_count = 1 : i64}
      : (tensor<2x1x3xf32>, tensor<2x1x2xf32>) -> tensor<1x2x2xf32>
  // o = 0: batch 0, kernel [1, 1] -> [3, 5]; o = 1: batch 1, kernel [0, 1] -> [20, 30]
  check.expect_eq_const %r, dense<[[[3.0, 5.0], [20.0, 30.0]]]> : tensor<1x2x2xf32>
  func.return
}

// -----

func.func @reduce_window_with_base_dilation_and_padding() {
  %x = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %r = "stablehlo.reduce_window"(%x, %z) ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %s = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) {
    window_dimensions = array<i64: 2>, window_strides = array<i64: 1>,
    base_dilations = array<i64: 2>, padding = dense<[[1, 0]]> : tensor<1x2xi64>
  } : (tensor<3xi32>, tensor<i32>) -> tensor<5xi32>
  // dilated and padded base: [0, 1, 0, 2, 0, 3]
  check.expect_eq_const %r, dense<[1, 1, 2, 2, 3]> : tensor<5xi32>
  func.return
}

// -----

func.func @select_and_scatter_with_padding() {
  %x = stablehlo.constant dense<[3.0, 1.0, 4.0, 1.0, 5.0]> : tensor<5xf32>
  %src = stablehlo.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.select_and_scatter"(%x, %src, %z) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {
    window_dimensions = array<i64: 3>, window_strides = array<i64: 2>,
    padding = dense<[[1, 1]]> : tensor<1x2xi64>
  } : (tensor<5xf32>, tensor<3xf32>, tensor<f32>) -> tensor<5xf32>
  // windows over [pad, 3, 1], [1, 4, 1], [1, 5, pad]: maxima at 0, 2, 4
  check.expect_eq_const %r, dense<[10.0, 0.0, 20.0, 0.0, 30.0]> : tensor<5xf32>
  func.return
}

// -----

func.func @map_two_operands() {
  %x = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xui32>
  %y = stablehlo.constant dense<[[5, 6], [7, 8]]> : tensor<2x2xui32>
  %r = "stablehlo.map"(%x, %y) ({
  ^bb0(%a: tensor<ui32>, %b: tensor<ui32>):
    %m = stablehlo.multiply %a, %b : tensor<ui32>
    %s = stablehlo.subtract %m, %a : tensor<ui32>
    stablehlo.return %s : tensor<ui32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<2x2xui32>, tensor<2x2xui32>) -> tensor<2x2xui32>
  check.expect_eq_const %r, dense<[[4, 10], [18, 28]]> : tensor<2x2xui32>
  func.return
}

// -----

func.func @composite_runs_its_decomposition() {
  %x = stablehlo.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %r = stablehlo.composite "my.twice_plus" %x {
    composite_attributes = {bias = 1.0 : f32}, decomposition = @twice_plus_impl, version = 1 : i32
  } : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %r, dense<[3.0, -3.0]> : tensor<2xf32>
  func.return
}

func.func private @twice_plus_impl(%x: tensor<2xf32>) -> tensor<2xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<2xf32>
  %d = stablehlo.add %x, %x : tensor<2xf32>
  %r = stablehlo.add %d, %one : tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @tokens_and_optimization_barrier() {
  %x = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %t0 = stablehlo.after_all : !stablehlo.token
  %t1 = stablehlo.after_all %t0, %t0 : !stablehlo.token
  %b:2 = stablehlo.optimization_barrier %x, %t1 : tensor<2xi64>, !stablehlo.token
  %y = stablehlo.add %b#0, %b#0 : tensor<2xi64>
  check.expect_eq_const %y, dense<[2, 4]> : tensor<2xi64>
  func.return
}

// -----

func.func @get_dimension_size_of_an_empty_dim() {
  %x = stablehlo.constant dense<> : tensor<3x0xf32>
  %d0 = stablehlo.get_dimension_size %x, dim = 0 : (tensor<3x0xf32>) -> tensor<i32>
  %d1 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<3x0xf32>) -> tensor<i32>
  check.expect_eq_const %d0, dense<3> : tensor<i32>
  check.expect_eq_const %d1, dense<0> : tensor<i32>
  func.return
}

// -----

func.func @reduce_precision_to_bf16_and_e5m2() {
  %x = stablehlo.constant dense<[1.00390625, 65520.0, 1.0e-40, 0x7FC00000, 3.0e38]> : tensor<5xf32>
  %bf = stablehlo.reduce_precision %x, format = e8m7 : tensor<5xf32>
  %e5 = stablehlo.reduce_precision %x, format = e5m2 : tensor<5xf32>
  // 1 + 2^-8 is a tie: to even (1.0); 65520 rounds to 65536 (bf16) and overflows e5m2;
  // 1e-40 is a bf16 denormal (0x00010000) and below e5m2's smallest denormal
  check.expect_eq_const %bf, dense<[1.0, 65536.0, 0x00010000, 0x7FC00000, 0x7F620000]> : tensor<5xf32>
  check.expect_eq_const %e5, dense<[1.0, 0x7F800000, 0.0, 0x7FC00000, 0x7F800000]> : tensor<5xf32>
  func.return
}

// -----

func.func @bitcast_convert_widening_and_narrowing() {
  %x = stablehlo.constant dense<[[0, 0, 128, 63], [0, 0, 0, 192]]> : tensor<2x4xui8>
  %f = stablehlo.bitcast_convert %x : (tensor<2x4xui8>) -> tensor<2xf32>
  check.expect_eq_const %f, dense<[1.0, -2.0]> : tensor<2xf32>
  %h = stablehlo.bitcast_convert %f : (tensor<2xf32>) -> tensor<2x2xi16>
  check.expect_eq_const %h, dense<[[0, 16256], [0, -16384]]> : tensor<2x2xi16>
  func.return
}

// -----

func.func @pad_negative_and_interior() {
  %x = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %p = stablehlo.constant dense<-1> : tensor<i8>
  %r = stablehlo.pad %x, %p, low = [-1, 1], high = [1, -2], interior = [1, 1]
      : (tensor<2x3xi8>, tensor<i8>) -> tensor<3x4xi8>
  // interior-padded rows [1 -1 2 -1 3], [4 -1 5 -1 6]; rows: [r0, pad, r1] minus the first, plus one
  check.expect_eq_const %r, dense<[[-1, -1, -1, -1], [-1, 4, -1, 5], [-1, -1, -1, -1]]> : tensor<3x4xi8>
  func.return
}

// -----

func.func @integer_division_edge_cases() {
  %x = stablehlo.constant dense<[-128, 7, -7, 5]> : tensor<4xi8>
  %y = stablehlo.constant dense<[-1, -2, 2, 0]> : tensor<4xi8>
  %q = stablehlo.divide %x, %y : tensor<4xi8>
  %r = stablehlo.remainder %x, %y : tensor<4xi8>
  // overflow wraps (-128 / -1 = -128, remainder 0); division by zero gives -1 and x
  check.expect_eq_const %q, dense<[-128, -3, -3, -1]> : tensor<4xi8>
  check.expect_eq_const %r, dense<[0, 1, -1, 5]> : tensor<4xi8>
  func.return
}

// -----

func.func @reduce_of_an_empty_dimension_is_the_init_value() {
  %x = stablehlo.constant dense<> : tensor<0x2xbf16>
  %init = stablehlo.constant dense<0xFF80> : tensor<bf16>
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [0]
      : (tensor<0x2xbf16>, tensor<bf16>) -> tensor<2xbf16>
  check.expect_eq_const %r, dense<0xFF80> : tensor<2xbf16>
  func.return
}

// -----

func.func @sub_byte_integers_wrap() {
  %x = stablehlo.constant dense<[7, -8, 3]> : tensor<3xi4>
  %one = stablehlo.constant dense<1> : tensor<3xi4>
  %s = stablehlo.add %x, %one : tensor<3xi4>
  %n = stablehlo.negate %x : tensor<3xi4>
  check.expect_eq_const %s, dense<[-8, -7, 4]> : tensor<3xi4>
  check.expect_eq_const %n, dense<[-7, -8, -3]> : tensor<3xi4>
  %init = stablehlo.constant dense<-1> : tensor<i4>
  %a = stablehlo.reduce(%x init: %init) applies stablehlo.and across dimensions = [0]
      : (tensor<3xi4>, tensor<i4>) -> tensor<i4>
  check.expect_eq_const %a, dense<0> : tensor<i4>
  func.return
}
