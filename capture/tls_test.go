package capture

import (
	"crypto/tls"
	"net"
)

// tlsHello sends a ClientHello naming sni on c.
func tlsHello(c net.Conn, sni string) error {
	return tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake()
}
