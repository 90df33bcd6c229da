// Processes running different programs, connected by send/recv (the recv's process listed
// first: it runs again once the send has run).

func.func @send(%operand : tensor<2x2xi64>, %token : !stablehlo.token) -> !stablehlo.token {
  %result = "stablehlo.send"(%operand, %token) {
    channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>,
    is_host_transfer = true
  } : (tensor<2x2xi64>, !stablehlo.token) -> !stablehlo.token
  func.return %result : !stablehlo.token
}

func.func @recv(%token : !stablehlo.token) -> (tensor<2x2xi64>, !stablehlo.token) {
  %results0, %results1 = "stablehlo.recv"(%token) {
    channel_handle = #stablehlo.channel_handle<handle = 1, type = 3>,
    is_host_transfer = true
  } : (!stablehlo.token) -> (tensor<2x2xi64>, !stablehlo.token)
  func.return %results0, %results1 : tensor<2x2xi64>, !stablehlo.token
}

func.func @send_recv() {
  %0 = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %1 = stablehlo.after_all : !stablehlo.token
  %results:3 = "interpreter.run_parallel"(%1, %0, %1) {
    programs = [[@recv, @send]]
  } : (!stablehlo.token, tensor<2x2xi64>, !stablehlo.token) -> (tensor<2x2xi64>, !stablehlo.token, !stablehlo.token)
  check.expect_eq_const %results#0, dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  func.return
}
