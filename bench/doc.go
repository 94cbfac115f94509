// Package bench holds sbx's benchmarks: Go benchmarks of start-up
// (go test -bench . ./bench/) and, in bench/compare, a program that times
// sbx side by side with bare execution, bubblewrap and srt in one
// interleaved run (go run ./bench/compare), and, in bench/learncompare,
// one that times sbx learn against a plain run of the same command (the
// runtime matrix's fixtures and go test on a package of this repository).
// Timing thresholds never go into tests; docs/benchmarks.md carries the
// latest tables and the commands that made them.
package bench
