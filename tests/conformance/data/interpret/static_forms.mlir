// Ops the interpreter suite tests that have no rule of their own in the common case: tuples
// built inside a function, the dynamic_* ops with static result types, and the older
// check custom call that returns its verdict.

func.func @tuple_and_get_tuple_element() {
  %a = stablehlo.constant dense<1.5> : tensor<f32>
  %b = stablehlo.constant dense<[2, 3]> : tensor<2xi32>
  %t = stablehlo.tuple %a, %b : tuple<tensor<f32>, tensor<2xi32>>
  %n = stablehlo.tuple %t, %a : tuple<tuple<tensor<f32>, tensor<2xi32>>, tensor<f32>>
  %inner = stablehlo.get_tuple_element %n[0] : (tuple<tuple<tensor<f32>, tensor<2xi32>>, tensor<f32>>) -> tuple<tensor<f32>, tensor<2xi32>>
  %x = stablehlo.get_tuple_element %inner[1] : (tuple<tensor<f32>, tensor<2xi32>>) -> tensor<2xi32>
  %y = stablehlo.get_tuple_element %n[1] : (tuple<tuple<tensor<f32>, tensor<2xi32>>, tensor<f32>>) -> tensor<f32>
  check.expect_eq_const %x, dense<[2, 3]> : tensor<2xi32>
  check.expect_eq_const %y, dense<1.5> : tensor<f32>
  func.return
}

// -----

func.func @dynamic_iota_static_result() {
  %shape = stablehlo.constant dense<[3, 2]> : tensor<2xi64>
  %r = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<2xi64>) -> tensor<3x2xi32>
  check.expect_eq_const %r, dense<[[0, 0], [1, 1], [2, 2]]> : tensor<3x2xi32>
  func.return
}

// -----

func.func @dynamic_broadcast_in_dim_static_result() {
  %operand = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %shape = stablehlo.constant dense<[3, 2]> : tensor<2xi64>
  %r = stablehlo.dynamic_broadcast_in_dim %operand, %shape, dims = [1] : (tensor<2xi32>, tensor<2xi64>) -> tensor<3x2xi32>
  check.expect_eq_const %r, dense<[[1, 2], [1, 2], [1, 2]]> : tensor<3x2xi32>
  func.return
}

// -----

func.func @dynamic_reshape_static_result() {
  %operand = stablehlo.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %r = stablehlo.dynamic_reshape %operand, %shape : (tensor<6xi32>, tensor<2xi64>) -> tensor<2x3xi32>
  check.expect_eq_const %r, dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  func.return
}

// -----

func.func @dynamic_conv_constant_padding() {
  %lhs = stablehlo.constant dense<[[[1.0, 2.0, 3.0, 4.0]]]> : tensor<1x1x4xf32>
  %rhs = stablehlo.constant dense<[[[1.0, 1.0]]]> : tensor<1x1x2xf32>
  %pad = stablehlo.constant dense<[[1, 0]]> : tensor<1x2xi64>
  %r = "stablehlo.dynamic_conv"(%lhs, %rhs, %pad) {
    batch_group_count = 1 : i64,
    dimension_numbers = #stablehlo.conv<[b, f, 0]x[o, i, 0]->[b, f, 0]>,
    feature_group_count = 1 : i64,
    window_strides = array<i64: 1>
  } : (tensor<1x1x4xf32>, tensor<1x1x2xf32>, tensor<1x2xi64>) -> tensor<1x1x4xf32>
  check.expect_eq_const %r, dense<[[[1.0, 3.0, 5.0, 7.0]]]> : tensor<1x1x4xf32>
  func.return
}

// -----

func.func @check_custom_call_returning_its_verdict() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.add %0, %0 : tensor<2xf32>
  %2 = stablehlo.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %ok = stablehlo.custom_call @check.eq(%1, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
  check.expect_eq_const %ok, dense<true> : tensor<i1>
  func.return
}

// -----

func.func @token_through_while() {
  %t = stablehlo.create_token : !stablehlo.token
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %three = stablehlo.constant dense<3> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %tk = %t) : tensor<i32>, !stablehlo.token
  cond {
    %c = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %j = stablehlo.add %i, %one : tensor<i32>
    %tk2 = stablehlo.after_all %tk : !stablehlo.token
    stablehlo.return %j, %tk2 : tensor<i32>, !stablehlo.token
  }
  check.expect_eq_const %r#0, dense<3> : tensor<i32>
  func.return
}

// -----

// Checks run where they are: in a loop body each time it runs, in a branch only when taken.
func.func @checks_inside_a_loop_and_its_branches() {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %five = stablehlo.constant dense<5> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %r = stablehlo.while(%i = %zero) : tensor<i32>
  cond {
    %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %small = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    check.expect_eq_const %small, dense<true> : tensor<i1>
    %never = stablehlo.compare EQ, %i, %five : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.if"(%never) ({
      check.expect_eq_const %i, dense<5> : tensor<i32>
      check.expect_eq_const %i, dense<-1> : tensor<i32>
      stablehlo.return
    }, {
      stablehlo.return
    }) : (tensor<i1>) -> ()
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j : tensor<i32>
  }
  check.expect_eq_const %r, dense<3> : tensor<i32>
  func.return
}
