//go:build race

package netproxy

// raceDetector: the race detector slows every TLS handshake several
// times over; load tests size themselves down under it.
const raceDetector = true
