//go:build !race

package netproxy

const raceDetector = false
