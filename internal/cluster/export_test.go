package cluster

import (
	"crypto/tls"

	"github.com/hubd/hubd/internal/cluster/bus"
)

// StopCalls stops n's node service alone: n keeps its leases but answers
// no other node, as a node cut off from the others would.
func (n *Node) StopCalls() { n.service.close() }

// KeyPartition is keyPartition.
var KeyPartition = keyPartition

// NodeCertificate is the certificate a node named node of the cluster of
// creds presents.
func NodeCertificate(creds *bus.Creds, node string) (tls.Certificate, error) {
	t, err := newNodeTLS(creds, node)
	if err != nil {
		return tls.Certificate{}, err
	}
	return t.cert, nil
}
