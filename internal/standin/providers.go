package standin

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
)

// openAI is the OpenAI Chat Completions stand-in.
type openAI struct{}

var openAIParams = []string{
	"model", "messages", "max_completion_tokens", "max_tokens", "response_format", "temperature",
	"top_p", "n", "stream", "stream_options", "stop", "seed", "user", "store", "metadata", "tools",
	"tool_choice", "parallel_tool_calls", "reasoning_effort", "service_tier", "logprobs",
	"top_logprobs", "presence_penalty", "frequency_penalty", "logit_bias", "modalities",
	"prediction", "audio", "web_search_options", "verbosity", "prompt_cache_key", "safety_identifier",
}

var schemaNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (openAI) check(_ http.Header, body []byte) (string, []string, *apiError) {
	// Most requests' message contents are all strings: the messages are
	// then decoded straight from the body, in the one pass; any other
	// request is read again, each content kept raw for contentText.
	var plain []plainMessage
	m, direct, ok := decodeObjectInto(body, "messages", &plain)
	var msgs []chatMessage
	if direct && ok && !slices.ContainsFunc(plain, func(m plainMessage) bool { return m.Content == nil }) {
		msgs = make([]chatMessage, len(plain))
		for i, pm := range plain {
			msgs[i] = chatMessage{role: pm.Role, text: *pm.Content, textOK: true}
		}
	} else if direct {
		m, ok = decodeObject(body)
	}
	if !ok {
		return "", nil, badRequest("the request body is not a JSON object")
	}
	if k := unknownMember(m, openAIParams...); k != "" {
		e := badRequest("unrecognized request argument supplied")
		e.param = k
		return "", nil, e
	}
	param := func(name, msg string) *apiError {
		e := badRequest("%s", msg)
		e.param = name
		return e
	}
	var model string
	if json.Unmarshal(m["model"], &model) != nil || model == "" {
		return "", nil, param("model", "you must provide a model parameter")
	}
	var stream bool
	if raw, ok := m["stream"]; ok && (json.Unmarshal(raw, &stream) != nil || stream) {
		return "", nil, param("stream", "this stand-in does not stream")
	}
	if raw, ok := m["n"]; ok && string(raw) != "1" {
		return "", nil, param("n", "this stand-in answers with one choice")
	}
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		if raw, ok := m[k]; ok && !positiveInt(raw) {
			return "", nil, param(k, "must be an integer of at least 1")
		}
	}
	if msgs == nil {
		msgs, ok = decodeMessages(m["messages"])
	}
	if !ok || len(msgs) == 0 {
		return "", nil, param("messages", "messages must be a non-empty array")
	}
	var texts []string
	for _, msg := range msgs {
		if !slices.Contains([]string{"system", "developer", "user", "assistant"}, msg.role) {
			return "", nil, param("messages", "unsupported message role")
		}
		if !msg.textOK {
			return "", nil, param("messages", "message content must be a string or an array of text parts")
		}
		if msg.role == "user" {
			texts = append(texts, msg.text)
		}
	}
	if raw, ok := m["response_format"]; ok {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string `json:"name"`
				Strict *bool  `json:"strict"`
				Schema any    `json:"schema"`
			} `json:"json_schema"`
		}
		if json.Unmarshal(raw, &rf) != nil {
			return "", nil, param("response_format", "response_format is not an object")
		}
		switch rf.Type {
		case "text", "json_object":
		case "json_schema":
			js := rf.JSONSchema
			if js == nil || !schemaNameRE.MatchString(js.Name) {
				return "", nil, param("response_format.json_schema.name", "json_schema needs a name of letters, digits, _ and -")
			}
			if _, ok := js.Schema.(map[string]any); !ok {
				return "", nil, param("response_format.json_schema.schema", "json_schema.schema must be an object")
			}
			if js.Strict != nil && *js.Strict && !strictSchema(js.Schema) {
				return "", nil, param("response_format", "invalid schema for strict mode: every object needs additionalProperties false and every property required")
			}
		default:
			return "", nil, param("response_format.type", "unknown response_format type")
		}
	}
	return model, texts, nil
}

// chatMessage is one message as the stand-in reads it: its role, and its
// content's text when the content is a string or an array of text parts.
type chatMessage struct {
	role, text string
	textOK     bool
}

// plainMessage is a message whose content is a string (nil: it is not).
type plainMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
}

// decodeMessages decodes a messages array, each content kept raw for
// contentText.
func decodeMessages(raw json.RawMessage) ([]chatMessage, bool) {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &msgs) != nil {
		return nil, false
	}
	out := make([]chatMessage, len(msgs))
	for i, m := range msgs {
		text, ok := contentText(m.Content)
		out[i] = chatMessage{role: m.Role, text: text, textOK: ok}
	}
	return out, true
}

// contentText reads a message content: a string, or an array of text
// parts joined.
func contentText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	out := ""
	for _, p := range parts {
		if p.Type != "text" {
			return "", false
		}
		out += p.Text
	}
	return out, true
}

func (openAI) writeError(w http.ResponseWriter, e *apiError, requestID string) {
	type errObj struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	o := errObj{Message: e.msg, Type: e.typ}
	if e.param != "" {
		o.Param = &e.param
	}
	if e.code != "" {
		o.Code = &e.code
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_"+requestID)
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(struct {
		Error errObj `json:"error"`
	}{o})
}

func (openAI) overloaded() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", msg: "the stand-in is overloaded; retry later"}
}

type openAIMessage struct {
	Role        string   `json:"role"`
	Content     *string  `json:"content"`
	Refusal     *string  `json:"refusal"`
	Annotations []string `json:"annotations"`
}

type openAIChoice struct {
	Index        int           `json:"index"`
	Message      openAIMessage `json:"message"`
	Logprobs     *struct{}     `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type openAICompletion struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []openAIChoice `json:"choices"`
	Usage             openAIUsage    `json:"usage"`
	ServiceTier       string         `json:"service_tier"`
	SystemFingerprint string         `json:"system_fingerprint"`
}

type openAIUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

func (openAI) answer(model, mode, requestID string, a Answer, created int64) (int, []byte) {
	doc, _ := json.Marshal(a)
	content := string(doc)
	msg := openAIMessage{Role: "assistant", Content: &content, Annotations: []string{}}
	finish := "stop"
	switch mode {
	case Refusal:
		r := refusalText
		msg.Content, msg.Refusal = nil, &r
	case Truncated:
		half := content[:len(content)/2]
		msg.Content, finish = &half, "length"
	case NoToolUse:
		prose := proseAnswer(a)
		msg.Content = &prose
	}
	c := openAICompletion{
		ID: "chatcmpl-" + requestID, Object: "chat.completion", Created: created, Model: model,
		Choices:     []openAIChoice{{Index: 0, Message: msg, FinishReason: finish}},
		ServiceTier: "default", SystemFingerprint: "fp_standin",
	}
	c.Usage.PromptTokens = 100
	c.Usage.CompletionTokens = len(content)/4 + 1
	c.Usage.TotalTokens = c.Usage.PromptTokens + c.Usage.CompletionTokens
	b, _ := json.Marshal(c)
	return http.StatusOK, b
}

// anthropic is the Anthropic Messages stand-in.
type anthropic struct{}

var anthropicParams = []string{
	"model", "max_tokens", "messages", "system", "tools", "tool_choice", "temperature", "top_p",
	"top_k", "stop_sequences", "stream", "metadata", "thinking", "service_tier", "container", "mcp_servers",
}

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

func (anthropic) check(h http.Header, body []byte) (string, []string, *apiError) {
	if h.Get("Anthropic-Version") == "" {
		return "", nil, badRequest("anthropic-version: header is required")
	}
	m, ok := decodeObject(body)
	if !ok {
		return "", nil, badRequest("the request body is not a JSON object")
	}
	if k := unknownMember(m, anthropicParams...); k != "" {
		return "", nil, badRequest("%s: extra inputs are not permitted", k)
	}
	var model string
	if json.Unmarshal(m["model"], &model) != nil || model == "" {
		return "", nil, badRequest("model: field required")
	}
	if !positiveInt(m["max_tokens"]) {
		return "", nil, badRequest("max_tokens: an integer of at least 1 is required")
	}
	var stream bool
	if raw, ok := m["stream"]; ok && (json.Unmarshal(raw, &stream) != nil || stream) {
		return "", nil, badRequest("stream: this stand-in does not stream")
	}
	if raw, ok := m["system"]; ok {
		if _, ok := blocksText(raw); !ok {
			return "", nil, badRequest("system: a string or text blocks are required")
		}
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(m["messages"], &msgs) != nil || len(msgs) == 0 {
		return "", nil, badRequest("messages: at least one message is required")
	}
	if msgs[0].Role != "user" {
		return "", nil, badRequest("messages: the first message must use the user role")
	}
	var texts []string
	for _, msg := range msgs {
		if msg.Role != "user" && msg.Role != "assistant" {
			return "", nil, badRequest("messages: unexpected role")
		}
		ts, ok := blocksText(msg.Content)
		if !ok {
			return "", nil, badRequest("messages: content must be a string or non-empty text blocks")
		}
		if msg.Role == "user" {
			texts = append(texts, ts...)
		}
	}
	var tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	}
	if raw, ok := m["tools"]; ok {
		if json.Unmarshal(raw, &tools) != nil {
			return "", nil, badRequest("tools: an array of tools is required")
		}
		for _, t := range tools {
			if !toolNameRE.MatchString(t.Name) {
				return "", nil, badRequest("tools: a tool name of letters, digits, _ and - is required")
			}
			if t.InputSchema == nil || t.InputSchema["type"] != "object" {
				return "", nil, badRequest("tools: input_schema must be an object schema")
			}
		}
	}
	if raw, ok := m["tool_choice"]; ok {
		var tc struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &tc) != nil {
			return "", nil, badRequest("tool_choice: an object is required")
		}
		switch tc.Type {
		case "auto", "any", "none":
		case "tool":
			if !slices.ContainsFunc(tools, func(t struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				InputSchema map[string]any `json:"input_schema"`
			}) bool {
				return t.Name == tc.Name
			}) {
				return "", nil, badRequest("tool_choice: the named tool is not in tools")
			}
		default:
			return "", nil, badRequest("tool_choice: unknown type")
		}
	}
	return model, texts, nil
}

// blocksText reads a content that is a string or an array of text blocks,
// each with non-empty text, and returns its texts.
func blocksText(raw json.RawMessage) ([]string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, s != ""
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil || len(blocks) == 0 {
		return nil, false
	}
	var out []string
	for _, b := range blocks {
		if b.Type != "text" || b.Text == nil || *b.Text == "" {
			return nil, false
		}
		out = append(out, *b.Text)
	}
	return out, true
}

func (anthropic) writeError(w http.ResponseWriter, e *apiError, requestID string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_"+requestID)
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}{Type: "error", Error: struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{e.typ, e.msg}, RequestID: "req_" + requestID})
}

func (anthropic) overloaded() *apiError {
	return &apiError{status: 529, typ: "overloaded_error", msg: "the stand-in is overloaded; retry later"}
}

type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type anthropicMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []anthropicBlock `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        struct {
		InputTokens              int    `json:"input_tokens"`
		OutputTokens             int    `json:"output_tokens"`
		CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
		ServiceTier              string `json:"service_tier"`
	} `json:"usage"`
}

func (anthropic) answer(model, mode, requestID string, a Answer, _ int64) (int, []byte) {
	doc, _ := json.Marshal(a)
	m := anthropicMessage{ID: "msg_" + requestID, Type: "message", Role: "assistant", Model: model}
	switch mode {
	case Refusal:
		m.Content, m.StopReason = []anthropicBlock{{Type: "text", Text: refusalText}}, "refusal"
	case Truncated:
		m.Content, m.StopReason = []anthropicBlock{{Type: "text", Text: string(doc[:len(doc)/2])}}, "max_tokens"
	case NoToolUse:
		m.Content, m.StopReason = []anthropicBlock{{Type: "text", Text: string(doc)}}, "end_turn"
	default:
		m.Content = []anthropicBlock{{Type: "tool_use", ID: "toolu_" + requestID, Name: "answer", Input: doc}}
		m.StopReason = "tool_use"
	}
	m.Usage.InputTokens = 100
	m.Usage.OutputTokens = len(doc)/4 + 1
	m.Usage.ServiceTier = "standard"
	b, _ := json.Marshal(m)
	return http.StatusOK, b
}

// refusalText is the stand-in's refusal.
const refusalText = "The stand-in declines to answer this request."

// proseAnswer is an answer written as prose, not JSON.
func proseAnswer(a Answer) string {
	return "Here is my triage. " + a.Summary
}
