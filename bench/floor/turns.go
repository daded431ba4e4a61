package floor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/wal"
)

// turnsMethod is the turn floor's stream: a seat of a pair sends
// AgentFrame sends and reads HubFrame acks and turn notices.
const turnsMethod = "/hubd.floor.Floor/Turns"

// The metadata naming a turn stream's pair and seat.
const (
	pairKey = "x-floor-pair"
	seatKey = "x-floor-seat"
)

// pair is two seats taking turns in one session of the log: its lock is
// held from choosing the seq through the append, as the hub holds a
// session's.
type pair struct {
	mu    sync.Mutex
	last  uint64
	seats [2]*seat
}

// seat is one side of a pair: the server's end of its stream.
type seat struct {
	mu     sync.Mutex // serialises writes; done is set under it
	stream grpc.ServerStream
	done   bool // the handler returned: no more writes
}

// write sends f on the seat's stream unless its handler has returned.
func (st *seat) write(f *hubpb.HubFrame) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return io.EOF
	}
	return st.stream.SendMsg(f)
}

// turns serves one seat's stream: each send read is appended to the
// pair's session, synced, then the other seat is told its turn and the
// sender is acknowledged, all on the stream's own goroutine.
func (s *Server) turns(_ any, stream grpc.ServerStream) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	id, err := uuid.Parse(first(md, pairKey))
	n := first(md, seatKey)
	if err != nil || (n != "0" && n != "1") {
		return status.Errorf(codes.InvalidArgument, "floor: want %s (a UUID) and %s (0 or 1)", pairKey, seatKey)
	}
	me := &seat{stream: stream}
	p, other, both := s.seat(id, n == "1", me)
	if p == nil {
		return status.Errorf(codes.AlreadyExists, "floor: seat %s of pair %s is taken", n, id)
	}
	defer func() {
		me.mu.Lock()
		me.done = true
		me.mu.Unlock()
	}()
	if both { // the second seat to come makes seat 0 begin
		_ = p.seats[0].write(&hubpb.HubFrame{Frame: &hubpb.HubFrame_Ready{Ready: &hubpb.StreamReady{}}})
	}
	for {
		f := new(hubpb.AgentFrame)
		if err := stream.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		snd := f.GetSend()
		if snd == nil || snd.GetEnvelope() == nil {
			return status.Errorf(codes.InvalidArgument, "floor: want a send with an envelope")
		}
		env := snd.GetEnvelope()
		p.mu.Lock()
		env.SessionId, env.Seq = id.String(), p.last+1
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(env)
		if err == nil {
			w := wal.Write{Session: id, Records: []wal.Record{{Seq: env.Seq, Data: data}}}
			if env.Seq == 1 {
				w.Meta = []byte(meta)
			}
			err = s.log.Append(stream.Context(), w)
		}
		if err != nil {
			p.mu.Unlock()
			return status.Errorf(codes.Unavailable, "floor: %v", err)
		}
		p.last = env.Seq
		next := p.seats[other]
		p.mu.Unlock()
		if next != nil { // a seat gone at the end of a run is not told
			_ = next.write(&hubpb.HubFrame{Frame: &hubpb.HubFrame_Delivery{Delivery: &hubpb.Delivery{Envelope: env, YourTurn: true}}})
		}
		ack := &hubpb.HubFrame{Frame: &hubpb.HubFrame_Ack{Ack: &hubpb.StreamAck{Ref: snd.GetRef(), Response: &hubpb.SendResponse{Seq: env.Seq}}}}
		if err := me.write(ack); err != nil {
			return err
		}
	}
}

// seat takes seat (1 when second) of pair id for st, making the pair on
// first use; nil when the seat is taken. It returns the other seat's
// index, and whether both seats are now taken.
func (s *Server) seat(id uuid.UUID, second bool, st *seat) (p *pair, other int, both bool) {
	mine, other := 0, 1
	if second {
		mine, other = 1, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p = s.pairs[id]
	if p == nil {
		p = &pair{}
		s.pairs[id] = p
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seats[mine] != nil {
		return nil, 0, false
	}
	p.seats[mine] = st
	return p, other, p.seats[other] != nil
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Turns is a run of the turn floor's clients.
type Turns struct {
	// Pairs is how many sessions take turns at once: two seats each, each
	// seat on its own connection, one send in flight per pair.
	Pairs int
	// Payload is the text bytes of each envelope.
	Payload int
	// Acked is called with the start and the acknowledgement of every
	// send; Told with its start and when the other seat was told its
	// turn. Both from the clients' goroutines.
	Acked, Told func(start, done time.Time)
}

// DriveTurns runs ld's pairs against the server at addr until stop is
// closed, then lets the sends in flight finish. A failed stream ends the
// run with its error.
func DriveTurns(ctx context.Context, addr string, ld Turns, stop <-chan struct{}) error {
	if ld.Pairs < 1 {
		return errors.New("floor: Pairs must be at least 1")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conns := make([]*grpc.ClientConn, 2*ld.Pairs)
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := grpc.NewClient(addr, dialOptions()...)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		conns[i] = c
	}
	text := strings.Repeat("x", ld.Payload)
	seats := make([]*clientSeat, 0, len(conns))
	for i := range ld.Pairs {
		cp := &clientPair{}
		pid := uuid.NewString()
		for n := range 2 {
			sctx := metadata.AppendToOutgoingContext(ctx, pairKey, pid, seatKey, fmt.Sprint(n))
			cs, err := conns[2*i+n].NewStream(sctx, &grpc.StreamDesc{StreamName: "Turns", ServerStreams: true, ClientStreams: true}, turnsMethod)
			if err != nil {
				return fmt.Errorf("floor: turns: %w", err)
			}
			seats = append(seats, &clientSeat{pair: cp, stream: cs, text: text, ld: ld})
		}
	}
	errs := make(chan error, len(seats))
	var wg sync.WaitGroup
	for _, cs := range seats {
		wg.Go(func() { errs <- cs.run() })
	}
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		for _, cs := range seats {
			cs.closeSend()
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// clientPair is what a pair's two seats share: when the send in flight
// began.
type clientPair struct {
	mu    sync.Mutex
	start time.Time
}

// clientSeat is one seat's client.
type clientSeat struct {
	pair   *clientPair
	stream grpc.ClientStream
	text   string
	ld     Turns

	mu     sync.Mutex // serialises SendMsg and CloseSend
	closed bool
	ref    uint64
	starts map[uint64]time.Time // ref → start of the sends not yet acknowledged
}

// run reads the seat's frames until the server ends the stream: a turn
// notice (or, for seat 0, the ready frame) is answered by the next send.
func (cs *clientSeat) run() error {
	for {
		f := new(hubpb.HubFrame)
		if err := cs.stream.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("floor: turns: %w", err)
		}
		now := time.Now()
		switch f := f.GetFrame().(type) {
		case *hubpb.HubFrame_Ack:
			cs.mu.Lock()
			start, ok := cs.starts[f.Ack.GetRef()]
			delete(cs.starts, f.Ack.GetRef())
			cs.mu.Unlock()
			if ok && cs.ld.Acked != nil {
				cs.ld.Acked(start, now)
			}
		case *hubpb.HubFrame_Delivery:
			cs.pair.mu.Lock()
			start := cs.pair.start
			cs.pair.mu.Unlock()
			if cs.ld.Told != nil {
				cs.ld.Told(start, now)
			}
			if err := cs.send(); err != nil {
				return err
			}
		case *hubpb.HubFrame_Ready:
			if err := cs.send(); err != nil {
				return err
			}
		}
	}
}

// send sends the seat's next envelope, unless the run is over.
func (cs *clientSeat) send() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil
	}
	cs.ref++
	start := time.Now()
	if cs.starts == nil {
		cs.starts = map[uint64]time.Time{}
	}
	cs.starts[cs.ref] = start
	cs.pair.mu.Lock()
	cs.pair.start = start
	cs.pair.mu.Unlock()
	f := &hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Send{Send: &hubpb.StreamSend{Ref: cs.ref, Envelope: &hubpb.Envelope{Type: "text",
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: cs.text}}}}}}
	if err := cs.stream.SendMsg(f); err != nil {
		return fmt.Errorf("floor: turns: send: %w", err)
	}
	return nil
}

// closeSend ends the seat's sends: the server answers what it read, then
// ends the stream.
func (cs *clientSeat) closeSend() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.closed {
		cs.closed = true
		_ = cs.stream.CloseSend()
	}
}
