package huba2a

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2apb"
)

// List bounds: a page's default and largest size, and how many tasks a
// listing considers at most.
const (
	defaultPageSize = 50
	maxPageSize     = 100
	maxListed       = 10000
)

// list lists the caller's tasks of the agent, newest first (by when they
// were opened: their ids are UUIDv7s), filtered by context, state and
// status time. Without includeArtifacts a task has no artifacts; without
// historyLength no history.
func (c *call) list(req *a2apb.ListTasksRequest) (proto.Message, *rpcError) {
	labels := map[string]string{labelAgent: c.agent.Agent}
	if req.GetContextId() != "" {
		labels[labelContext] = req.GetContextId()
	}
	var infos []*hubpb.SessionInfo
	for token := ""; len(infos) < maxListed; {
		resp, err := c.s.cfg.Client.ListSessions(c.ctx, &hubpb.ListSessionsRequest{Labels: labels, PageToken: token, PageSize: maxPageSize})
		if err != nil {
			return nil, fromHub(err)
		}
		for _, info := range resp.GetSessions() {
			if st := req.GetStatus(); st == a2apb.TaskState_TASK_STATE_UNSPECIFIED || TaskState(info, c.who) == st {
				infos = append(infos, info)
			}
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	slices.SortFunc(infos, func(a, b *hubpb.SessionInfo) int {
		return strings.Compare(b.GetMeta().GetSessionId(), a.GetMeta().GetSessionId())
	})
	size := int(req.GetPageSize())
	if req.PageSize == nil || size <= 0 {
		size = defaultPageSize
	}
	size = min(size, maxPageSize)
	var tasks []*a2apb.Task
	after := req.GetPageToken()
	total := 0
	next := ""
	for _, info := range infos {
		t, rerr := c.listed(req, info)
		if rerr != nil {
			return nil, rerr
		}
		if t == nil {
			continue // before the status time asked for
		}
		total++
		if after != "" && info.GetMeta().GetSessionId() >= after {
			continue
		}
		if len(tasks) == size {
			next = tasks[len(tasks)-1].GetId()
			continue
		}
		tasks = append(tasks, t)
	}
	return &a2apb.ListTasksResponse{Tasks: tasks, NextPageToken: next, PageSize: int32(size), TotalSize: int32(total)}, nil
}

// listed is one session as a listed task; nil when its status time is
// before the one asked for.
func (c *call) listed(req *a2apb.ListTasksRequest, info *hubpb.SessionInfo) (*a2apb.Task, *rpcError) {
	hl := req.HistoryLength
	if hl == nil {
		hl = proto.Int32(0)
	}
	needLog := req.GetIncludeArtifacts() || *hl > 0 || req.GetStatusTimestampAfter() != nil
	var log []*hubpb.Envelope
	if needLog {
		var err error
		if _, log, err = c.load(c.ctx, info.GetMeta().GetSessionId()); err != nil {
			return nil, fromHub(err)
		}
	}
	t := taskOf(info, log, c.agent.Agent, c.who, hl)
	if after := req.GetStatusTimestampAfter(); after != nil && (t.GetStatus().GetTimestamp() == nil ||
		!t.GetStatus().GetTimestamp().AsTime().After(after.AsTime())) {
		return nil, nil
	}
	if !req.GetIncludeArtifacts() {
		t.Artifacts = nil
	}
	return t, nil
}
