package huba2a

import (
	"net/http"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/internal/a2aconf"
	"github.com/hubd/hubd/internal/a2apb"
)

// Media types a task takes and gives: text parts, and JSON data parts
// (as their JSON text).
var (
	inputModes  = []string{"text/plain", "application/json"}
	outputModes = []string{"text/plain"}
)

// baseURL is the URL of the hub as the request reached it.
func baseURL(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// hubCard serves the hub's card: every exposed agent is a skill and an
// interface (the JSON-RPC endpoint /a2a, with the agent as tenant).
func (s *Server) hubCard(w http.ResponseWriter, r *http.Request) {
	if len(s.cfg.Agents) == 0 {
		http.NotFound(w, r)
		return
	}
	base := baseURL(r)
	card := s.card(r, "hubd", "A hubd session hub. Its agents, each reached with its name as tenant: "+s.names()+".")
	for _, a := range s.cfg.Agents {
		card.SupportedInterfaces = append(card.SupportedInterfaces, &a2apb.AgentInterface{
			Url: base + "/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: ProtocolVersion, Tenant: a.Agent})
		var tags, examples []string
		for _, sk := range a.Skills {
			tags = append(tags, sk.Tags...)
			examples = append(examples, sk.Examples...)
		}
		slices.Sort(tags)
		card.Skills = append(card.Skills, &a2apb.AgentSkill{Id: a.Agent, Name: a.Agent, Description: a.Description,
			Tags: slices.Compact(tags), Examples: examples})
	}
	writeCard(w, card)
}

// agentCard serves one exposed agent's card.
func (s *Server) agentCard(w http.ResponseWriter, r *http.Request) {
	a, ok := s.agents[r.PathValue("agent")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	card := s.card(r, a.Agent, a.Description)
	card.SupportedInterfaces = []*a2apb.AgentInterface{{
		Url: baseURL(r) + "/a2a/agents/" + a.Agent, ProtocolBinding: "JSONRPC", ProtocolVersion: ProtocolVersion}}
	card.Skills = skills(a.Skills)
	writeCard(w, card)
}

// card is what every card says: capabilities, security, media types.
func (s *Server) card(_ *http.Request, name, desc string) *a2apb.AgentCard {
	c := &a2apb.AgentCard{
		Name: name, Description: desc, Version: s.cfg.Version,
		Capabilities: &a2apb.AgentCapabilities{Streaming: proto.Bool(true), PushNotifications: proto.Bool(false),
			ExtendedAgentCard: proto.Bool(false)},
		DefaultInputModes: inputModes, DefaultOutputModes: outputModes,
		SecuritySchemes: map[string]*a2apb.SecurityScheme{},
	}
	for _, sec := range s.cfg.Security {
		scheme, ok := securityScheme(sec)
		if !ok {
			continue
		}
		c.SecuritySchemes[sec] = scheme
		c.SecurityRequirements = append(c.SecurityRequirements,
			&a2apb.SecurityRequirement{Schemes: map[string]*a2apb.StringList{sec: {}}})
	}
	return c
}

// securityScheme is a way a caller authenticates, by name.
func securityScheme(name string) (*a2apb.SecurityScheme, bool) {
	switch name {
	case "bearer":
		return &a2apb.SecurityScheme{Scheme: &a2apb.SecurityScheme_HttpAuthSecurityScheme{HttpAuthSecurityScheme: &a2apb.HTTPAuthSecurityScheme{
			Scheme: "Bearer", Description: "a hubd agent's token (hubd serve --tokens): the caller is that agent"}}}, true
	case "mtls":
		return &a2apb.SecurityScheme{Scheme: &a2apb.SecurityScheme_MtlsSecurityScheme{MtlsSecurityScheme: &a2apb.MutualTlsSecurityScheme{
			Description: "a client certificate of the hub's CA (hubd serve --client-ca): the caller is the agent it names"}}}, true
	case "dev":
		return &a2apb.SecurityScheme{Scheme: &a2apb.SecurityScheme_ApiKeySecurityScheme{ApiKeySecurityScheme: &a2apb.APIKeySecurityScheme{
			Location: "header", Name: "X-Hubd-Agent",
			Description: "development mode: the caller's agent name, accepted from the hub's own machine only"}}}, true
	}
	return nil, false
}

func skills(in []a2aconf.Skill) []*a2apb.AgentSkill {
	out := make([]*a2apb.AgentSkill, 0, len(in))
	for _, sk := range in {
		out = append(out, &a2apb.AgentSkill{Id: sk.ID, Name: sk.Name, Description: sk.Description, Tags: sk.Tags,
			Examples: sk.Examples, InputModes: inputModes, OutputModes: outputModes})
	}
	return out
}

func (s *Server) names() string {
	n := make([]string, 0, len(s.cfg.Agents))
	for _, a := range s.cfg.Agents {
		n = append(n, a.Agent)
	}
	return strings.Join(n, ", ")
}

// writeCard writes a card in its JSON form; cards change only with the
// hub's configuration, so caches may keep them a minute.
func writeCard(w http.ResponseWriter, card *a2apb.AgentCard) {
	b, err := protojson.Marshal(card)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=60")
	w.Write(b)
}
