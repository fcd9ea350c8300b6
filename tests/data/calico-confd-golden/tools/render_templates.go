package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"text/template"
)

func main() {
	// args: kv.json template prefix nodename
	raw, _ := os.ReadFile(os.Args[1])
	var kv map[string]string
	if err := json.Unmarshal(raw, &kv); err != nil { panic(err) }
	prefix := os.Args[3]
	os.Setenv("NODENAME", os.Args[4])
	store := map[string]string{}
	for k, v := range kv {
		if strings.HasPrefix(k, prefix+"/") {
			store[strings.TrimPrefix(k, prefix)] = v
		}
	}
	children := func(p string, dirsOnly bool) []string {
		p = strings.TrimSuffix(p, "/") + "/"
		seen := map[string]bool{}
		for k := range store {
			if strings.HasPrefix(k, p) {
				rest := strings.TrimPrefix(k, p)
				parts := strings.SplitN(rest, "/", 2)
				if dirsOnly && len(parts) < 2 { continue }
				seen[parts[0]] = true
			}
		}
		out := []string{}
		for s := range seen { out = append(out, s) }
		sort.Strings(out)
		return out
	}
	type KV struct{ Key, Value string }
	funcs := template.FuncMap{
		"getenv": func(k string, d ...string) string { v := os.Getenv(k); if v == "" && len(d) > 0 { return d[0] }; return v },
		"getv": func(k string, d ...string) (string, error) { v, ok := store[k]; if !ok { if len(d) > 0 { return d[0], nil }; return "", fmt.Errorf("key not found %s", k) }; return v, nil },
		"exists": func(k string) bool { _, ok := store[k]; return ok },
		"ls": func(p string) []string { return children(p, false) },
		"lsdir": func(p string) []string { return children(p, true) },
		"gets": func(pat string) []KV { out := []KV{}; for k, v := range store { if m, _ := path.Match(pat, k); m { out = append(out, KV{k, v}) } }; sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key }); return out },
		"json": func(s string) (map[string]interface{}, error) { var m map[string]interface{}; err := json.Unmarshal([]byte(s), &m); return m, err },
		"jsonArray": func(s string) ([]interface{}, error) { var m []interface{}; err := json.Unmarshal([]byte(s), &m); return m, err },
		"split": strings.Split, "join": strings.Join, "hasSuffix": strings.HasSuffix,
		"hashToIPv4": func(s string) string { return "HASH" },
	}
	tb, _ := os.ReadFile(os.Args[2])
	t := template.Must(template.New(path.Base(os.Args[2])).Funcs(funcs).Parse(string(tb)))
	if err := t.Execute(os.Stdout, nil); err != nil { panic(err) }
}
