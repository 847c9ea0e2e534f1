package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// The sample payloads read like a real tenant's audit log: people signing in, viewing and
// exporting documents, changing roles and approving invoices, and an AI agent calling
// tools under human approval. Names include non-ASCII text so canonicalization is
// exercised on every run.

type sampleEntity struct{ Type, ID, Display string }

func (e sampleEntity) json() map[string]any {
	m := map[string]any{"type": e.Type, "id": e.ID}
	if e.Display != "" {
		m["display"] = e.Display
	}
	return m
}

var (
	sampleUsers = []sampleEntity{
		{"user", "usr_01HZ7ADA", "Ada Lovelace"},
		{"user", "usr_01HZ7ZOE", "Zoë Åström"},
		{"user", "usr_01HZ7LEI", "李雷"},
		{"user", "usr_01HZ7GRC", "Grace Hopper"},
		{"user", "usr_01HZ7SRN", "Søren Kierkegaard"},
		{"user", "usr_01HZ7AMA", "Amaka Obi-Nwosu"},
	}
	sampleAgent     = sampleEntity{"agent", "agt_support_copilot", "Support Copilot"}
	sampleDocuments = []string{"Q3 board deck.pdf", "Vendor contract – Müller GmbH.docx", "Payroll 2026-10.xlsx", "Incident report INC-4411.md"}
	sampleRoles     = []string{"billing-admin", "support-agent", "read-only", "owner"}
	sampleTools     = []string{"crm.lookup_customer", "billing.issue_refund", "email.send_reply", "kb.search"}
	sampleAgents    = []string{"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 Safari/605.1.15",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/131.0 Safari/537.36", "sealtrail-go/0.1 (+cli)"}
	sampleRegions = []string{"eu-west-1", "us-east-2", "ap-southeast-1"}
)

// samplePayload returns the event-input members of one sample event, chosen by r.
// Signed events carry only what the client sends; unsigned ones also get the members the
// service adds (ipAddress, userAgent).
func samplePayload(r [32]byte, signed bool) map[string]any {
	pick := func(i int, n int) int { return int(r[i]) % n }
	u16 := func(i int) int { return int(binary.BigEndian.Uint16(r[i:])) }
	user := sampleUsers[pick(1, len(sampleUsers))]
	other := sampleUsers[(pick(1, len(sampleUsers))+1+pick(2, len(sampleUsers)-1))%len(sampleUsers)]
	p := map[string]any{
		"requestId": fmt.Sprintf("req_%x", r[20:26]),
		"context":   map[string]any{"region": sampleRegions[pick(3, len(sampleRegions))], "tenant": "acme-industries"},
	}
	status := []string{"success", "success", "success", "failed"}[pick(4, 4)]
	switch pick(0, 7) {
	case 0:
		p["action"] = "user.login"
		p["actor"] = user.json()
		p["risk"] = []string{"low", "medium"}[pick(5, 2)]
		p["sessionId"] = fmt.Sprintf("ses_%x", r[12:18])
		p["context"].(map[string]any)["method"] = []string{"sso", "password", "passkey"}[pick(6, 3)]
		p["context"].(map[string]any)["mfa"] = r[7]&1 == 1
		p["metadata"] = map[string]any{"attempt": 1 + pick(8, 3)}
	case 1, 2:
		doc := sampleDocuments[pick(5, len(sampleDocuments))]
		p["action"] = []string{"document.view", "document.export"}[pick(6, 2)]
		p["actor"] = user.json()
		p["target"] = sampleEntity{"document", fmt.Sprintf("doc_%x", r[14:18]), doc}.json()
		p["risk"] = "low"
		p["metadata"] = map[string]any{"bytes": 1024 + u16(8)*37, "format": []string{"pdf", "docx", "xlsx", "md"}[pick(5, 4)]}
	case 3:
		p["action"] = []string{"role.grant", "role.revoke"}[pick(5, 2)]
		p["actor"] = user.json()
		p["target"] = other.json()
		p["risk"] = "high"
		p["context"].(map[string]any)["role"] = sampleRoles[pick(6, len(sampleRoles))]
		p["metadata"] = map[string]any{"reason": "quarterly access review", "ticket": fmt.Sprintf("SEC-%d", 1000+u16(8)%9000)}
	case 4:
		p["action"] = "invoice.approve"
		p["actor"] = user.json()
		p["target"] = sampleEntity{"invoice", fmt.Sprintf("inv_%d", 20260000+u16(8)), ""}.json()
		p["risk"] = "medium"
		p["metadata"] = map[string]any{"amount": float64(u16(10)*7+5) / 100, "currency": []string{"EUR", "USD", "GBP"}[pick(12, 3)]}
	case 5:
		tool := sampleTools[pick(5, len(sampleTools))]
		in, out := sha256.Sum256(r[:16]), sha256.Sum256(r[16:])
		p["action"] = "agent.tool_call"
		p["actor"] = sampleAgent.json()
		p["target"] = sampleEntity{"customer", fmt.Sprintf("cus_%x", r[14:17]), ""}.json()
		p["risk"] = []string{"medium", "high"}[pick(6, 2)]
		p["agentId"] = sampleAgent.ID
		p["model"] = "acme-llm-2026-10"
		p["toolName"] = tool
		p["toolCallId"] = fmt.Sprintf("call_%x", r[18:24])
		p["policyVersion"] = "2026-10-01"
		p["inputHash"] = hex.EncodeToString(in[:])
		p["outputHash"] = hex.EncodeToString(out[:])
		p["metadata"] = map[string]any{"latencyMs": 40 + u16(8)%4000, "tokens": map[string]any{"input": u16(10) % 8000, "output": u16(12) % 2000}}
	default:
		p["action"] = "agent.approval"
		p["actor"] = user.json()
		p["target"] = sampleEntity{"agent_action", fmt.Sprintf("act_%x", r[14:18]), "Refund over policy limit"}.json()
		p["risk"] = []string{"high", "critical"}[pick(6, 2)]
		p["agentId"] = sampleAgent.ID
		p["toolName"] = "billing.issue_refund"
		p["approvalId"] = fmt.Sprintf("apr_%x", r[18:22])
		p["policyVersion"] = "2026-10-01"
		status = []string{"approved", "denied", "pending"}[pick(4, 3)]
		p["metadata"] = map[string]any{"comment": []string{"ok 👍", "Refusé : montant trop élevé", "needs a second reviewer"}[pick(7, 3)]}
	}
	p["status"] = status
	if !signed {
		p["ipAddress"] = fmt.Sprintf("203.0.113.%d", 1+pick(24, 254))
		p["userAgent"] = sampleAgents[pick(25, len(sampleAgents))]
	}
	return p
}
