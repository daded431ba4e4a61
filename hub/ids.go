package hub

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/google/uuid"

	"github.com/hubd/hubd/session"
)

// idSource keeps the newest id the hub made or holds live: the live
// snapshot's cutoff, and the floor of the ids it makes (see nextID).
type idSource struct {
	v7     bool // ids are the default Config.NewID's UUIDv7s
	mu     sync.Mutex
	newest session.ID
}

// note records an id the hub holds, for the snapshot's cutoff and so
// that the ids it makes stay above it.
func (s *idSource) note(id uuid.UUID) {
	s.mu.Lock()
	if bytes.Compare(id[:], s.newest[:]) > 0 {
		s.newest = session.ID(id)
	}
	s.mu.Unlock()
}

// next returns id, a new UUIDv7, or if it is not above every id the hub
// made or holds (the wall clock was set back since they were made), one
// with the newest one's time plus 1 ms.
func (s *idSource) next(id uuid.UUID) uuid.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.Compare(id[:], s.newest[:]) <= 0 {
		var ms [8]byte
		copy(ms[2:], s.newest[:6])
		binary.BigEndian.PutUint64(ms[:], binary.BigEndian.Uint64(ms[:])+1)
		copy(id[:6], ms[2:])
	}
	s.newest = session.ID(id)
	return id
}

// cutoff returns the newest id made or held.
func (s *idSource) cutoff() session.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newest
}
