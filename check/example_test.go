package check_test

import (
	"encoding/json"
	"fmt"

	"github.com/sbx-sh/sbx/check"
)

func ExampleConfig_Check() {
	cfg := check.Default()
	for _, cmd := range []string{"npm run build -- --watch", "npm run dev && npm run api"} {
		findings := cfg.Check("", cmd)
		fmt.Printf("%q: %d findings\n", cmd, len(findings))
		for _, f := range findings {
			fmt.Println(" ", f.Rule, f.Pos, f.Token)
		}
	}
	// Output:
	// "npm run build -- --watch": 0 findings
	// "npm run dev && npm run api": 4 findings
	//   charset 12 &
	//   metachars 12 &
	//   structure 12 &&
	//   prefix 0
}

func ExampleParseConfig() {
	cfg, err := check.ParseConfig(json.RawMessage(`{
		"enabled": true,
		"allowedPrefixes": ["make (test|lint)", "Bash(git:*)"],
		"allowWords": ["git"]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Enabled())
	fmt.Println(len(cfg.Check("", "make test")), len(cfg.Check("", "git log --oneline")), len(cfg.Check("", "make install")))

	_, err = check.ParseConfig(json.RawMessage(`{"maxLen": 10}`))
	fmt.Println(err)
	// Output:
	// true
	// 0 0 1
	// commands: unknown key "maxLen" (known keys: enabled, maxLength, charset, rules, allowedPrefixes, replaceDefaultPrefixes, deniedWords, allowWords)
}

func ExampleCheckConfirm() {
	findings, err := check.CheckConfirm(check.VerbRemove, "web", "REMOVE web")
	fmt.Println(len(findings), err)
	findings, _ = check.CheckConfirm(check.VerbRemove, "web", "remove web")
	fmt.Println(findings[0].Message)
	// Output:
	// 0 <nil>
	// the confirmation must be exactly "REMOVE web"
}
