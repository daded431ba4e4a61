package server

import "github.com/hubd/hubd/wal"

// WAL returns the server's write-ahead log (what its Open did, its
// damage); nil in a cluster.
func (s *Server) WAL() *wal.Log { return s.wal }
