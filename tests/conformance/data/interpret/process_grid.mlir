// A 2 x 2 grid of processes (replicas x partitions): each reports where it runs, and the
// partitions of a replica exchange values.

module @where_am_i {
  func.func @ids() -> (tensor<ui32>, tensor<ui32>) {
    %r = stablehlo.replica_id : tensor<ui32>
    %p = stablehlo.partition_id : tensor<ui32>
    return %r, %p : tensor<ui32>, tensor<ui32>
  }
  func.func @main() {
    %results:8 = "interpreter.run_parallel"() {
      programs = [[@ids, @ids], [@ids, @ids]]
    } : () -> (tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>,
               tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>)
    check.expect_eq_const %results#0, dense<0> : tensor<ui32>
    check.expect_eq_const %results#1, dense<0> : tensor<ui32>
    check.expect_eq_const %results#2, dense<0> : tensor<ui32>
    check.expect_eq_const %results#3, dense<1> : tensor<ui32>
    check.expect_eq_const %results#4, dense<1> : tensor<ui32>
    check.expect_eq_const %results#5, dense<0> : tensor<ui32>
    check.expect_eq_const %results#6, dense<1> : tensor<ui32>
    check.expect_eq_const %results#7, dense<1> : tensor<ui32>
    func.return
  }
}

// -----

module @swap_partitions {
  func.func @swap(%x : tensor<2xi32>) -> tensor<2xi32> {
    %y = "stablehlo.collective_permute"(%x) {
      source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>
    } : (tensor<2xi32>) -> tensor<2xi32>
    return %y : tensor<2xi32>
  }
  func.func @main() {
    %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
    %b = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
    %out:2 = "interpreter.run_parallel"(%a, %b) {
      programs = [[@swap, @swap]]
    } : (tensor<2xi32>, tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>)
    check.expect_eq_const %out#0, dense<[3, 4]> : tensor<2xi32>
    check.expect_eq_const %out#1, dense<[1, 2]> : tensor<2xi32>
    func.return
  }
}
