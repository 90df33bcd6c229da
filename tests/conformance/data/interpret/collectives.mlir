// Two replicas sum their operands; run_parallel runs them on a mesh of CPU devices.

module @sum_across_replicas {
  func.func @program(%x : tensor<3xf32>) -> tensor<3xf32> {
    %r = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
    }) {
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
    } : (tensor<3xf32>) -> tensor<3xf32>
    return %r : tensor<3xf32>
  }
  func.func @main() {
    %in0 = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %in1 = stablehlo.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
    %out:2 = "interpreter.run_parallel"(%in0, %in1) {
      programs = [[@program], [@program]]
    } : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
    check.expect_eq_const %out#0, dense<[11.0, 22.0, 33.0]> : tensor<3xf32>
    check.expect_eq_const %out#1, dense<[11.0, 22.0, 33.0]> : tensor<3xf32>
    func.return
  }
}
