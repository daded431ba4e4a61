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
// graphs decoded by reg (nil: the built-in conditions and targets).
func Adapters(reg *transition.Registry) *adapters.Registry {
	r, err := adapters.NewRegistry(workflow.New(reg), conversation.Adapter{}, discussion.Adapter{}, consulting.Adapter{})
	if err != nil {
		panic(err) // the list above has no duplicates
	}
	return r
}
