// exprcheck evaluates Argo retry expressions exactly as Argo's workflow-controller does
// (util/expr/argoexpr.EvalBool over util/expr/env.GetFuncMap), for tests/unit/test_retry_eval.py.
// Input: one JSON object per line {"expr": "...", "scope": {"retries": "0", ...}}.
// Output: one JSON object per line {"result": bool} or {"error": "..."}.
package main

import (
	"bufio"
	"encoding/json"
	"os"

	"github.com/argoproj/argo-workflows/v4/util/expr/argoexpr"
	"github.com/argoproj/argo-workflows/v4/util/expr/env"
)

type request struct {
	Expr  string                 `json:"expr"`
	Scope map[string]interface{} `json:"scope"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			_ = out.Encode(map[string]string{"error": err.Error()})
			continue
		}
		result, err := argoexpr.EvalBool(req.Expr, env.GetFuncMap(req.Scope))
		if err != nil {
			_ = out.Encode(map[string]string{"error": err.Error()})
			continue
		}
		_ = out.Encode(map[string]bool{"result": result})
	}
}
