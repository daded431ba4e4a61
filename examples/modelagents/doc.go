// Command modelagents runs two model-backed agents, a writer and a critic,
// in a feedback loop: each turn is a chat completion from an
// OpenAI-compatible endpoint, prompted with the agent's view of the
// session. The critic approves by starting its answer with "APPROVED",
// which sets the context variable approved = true and ends the session;
// max_turns caps the loop. The completions are requested with stream:
// true, and each agent writes its answer through turn.Stream as the model
// produces it: watchers see it grow (hubd sessions tail --deltas, the web
// view, an events stream with deltas=true) before the final envelope
// that takes the turn. An endpoint that does not stream answers at once.
// The tests run it against a scripted endpoint; a real one needs a model.
//
//	export HUBD_MODEL_URL=http://localhost:11434/v1   # Ollama, vLLM, llama.cpp, OpenAI, ...
//	export HUBD_MODEL=llama3.2
//	export HUBD_MODEL_KEY=...                         # if the endpoint wants one
//	go run ./examples/modelagents [--hub host:port] [--topic "..."]
package main
