// A counted loop and a probe inside it: every iteration is recorded.

func.func @sum_of_first_five() {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %five = stablehlo.constant dense<5> : tensor<i64>
  %i, %acc = stablehlo.while(%iter = %zero, %sum = %zero) : tensor<i64>, tensor<i64>
    cond {
      %lt = stablehlo.compare LT, %iter, %five : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %next = stablehlo.add %iter, %one : tensor<i64>
      %s = stablehlo.add %sum, %next : tensor<i64>
      %seen = interpreter.probe %s, probe_id = "running_sum" : tensor<i64>
      stablehlo.return %next, %seen : tensor<i64>, tensor<i64>
    }
  check.expect_eq_const %acc, dense<15> : tensor<i64>
  %third = stablehlo.constant dense<6> : tensor<i64>
  check.expect_serialized_eq %third, probe_id = "running_sum", iter = 2 : tensor<i64>
  func.return
}
