package server

import (
	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/adapters/consulting"
	"github.com/hubd/hubd/adapters/conversation"
	"github.com/hubd/hubd/adapters/discussion"
	"github.com/hubd/hubd/adapters/workflow"
	"github.com/hubd/hubd/transition"
)

// Adapters returns the registry of every session type hubd serves, with
// graphs decoded by reg (nil: the built-in conditions and targets) through
// a cache, so sessions with the same graph share one decoded copy.
func Adapters(reg *transition.Registry) *adapters.Registry {
	if reg == nil {
		reg = transition.NewRegistry()
	}
	dec := &GraphCache{Registry: reg, Max: 4096}
	r, err := adapters.NewRegistry(workflow.New(dec), conversation.Adapter{}, discussion.Adapter{}, consulting.Adapter{})
	if err != nil {
		panic(err) // the list above has no duplicates
	}
	return r
}
