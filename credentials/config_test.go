package credentials

import (
	"strings"
	"testing"
)

// TestMaskConfigNpmrc: every form npm reads a secret in is masked, the
// configuration around it is kept byte for byte.
func TestMaskConfigNpmrc(t *testing.T) {
	in := "registry=http://127.0.0.1:1/\n" +
		"fund=false\n" +
		"//registry.npmjs.org/:_authToken=FAKE-TOKEN-123\n" +
		"_auth = RkFLRQ==\r\n" +
		"//npm.example/:_password=\"RkFLRS1QQVNT\"\n" +
		"//npm.example/:username=me\n" +
		"email=me@example.test\n" +
		"key=\"-----BEGIN PRIVATE KEY-----\\nFAKE-PEM-KEY\\n-----END PRIVATE KEY-----\"\n" +
		"//npm.example/:keyfile=/home/me/client.key\n" +
		"https-proxy=http://me:FAKE-PROXY-PASS@127.0.0.1:3128\n" +
		"; //old.example/:_authToken=FAKE-OLD-TOKEN\n" +
		"@scope:registry=https://npm.example/\n" +
		"password=FAKE-PASSWORD\n" +
		"no-newline-at-end=1"
	got := string(MaskConfig([]byte(in), FormatNpmrc))
	for _, secret := range []string{"FAKE-TOKEN-123", "RkFLRQ==", "RkFLRS1QQVNT", "FAKE-PEM-KEY", "FAKE-PROXY-PASS", "FAKE-OLD-TOKEN", "FAKE-PASSWORD"} {
		if strings.Contains(got, secret) {
			t.Errorf("the copy holds %s:\n%s", secret, got)
		}
	}
	for _, kept := range []string{
		"registry=http://127.0.0.1:1/\n", "fund=false\n", "//npm.example/:username=me\n", "email=me@example.test\n",
		"//npm.example/:keyfile=/home/me/client.key\n", "@scope:registry=https://npm.example/\n", "no-newline-at-end=1",
		"//registry.npmjs.org/:_authToken=SBX_MASKED\n", "_auth = SBX_MASKED\r\n", "https-proxy=http://me:SBX_MASKED@127.0.0.1:3128\n",
	} {
		if !strings.Contains(got, kept) {
			t.Errorf("the copy lost %q:\n%s", kept, got)
		}
	}
	if strings.HasSuffix(got, "\n") {
		t.Errorf("a newline was added at the end:\n%s", got)
	}
}

// TestMaskConfigPypirc: configparser's password, with ':' or '=' and a
// continued value, is masked; the repositories stay.
func TestMaskConfigPypirc(t *testing.T) {
	in := "[distutils]\nindex-servers =\n    pypi\n    local\n\n[pypi]\nusername = __token__\npassword = pypi-FAKE-TOKEN\n\n[local]\nrepository: http://127.0.0.1:1/\nusername: me\npassword: FAKE-FIRST\n    FAKE-CONTINUED\n"
	got := string(MaskConfig([]byte(in), FormatPypirc))
	for _, secret := range []string{"pypi-FAKE-TOKEN", "FAKE-FIRST", "FAKE-CONTINUED"} {
		if strings.Contains(got, secret) {
			t.Errorf("the copy holds %s:\n%s", secret, got)
		}
	}
	for _, kept := range []string{"index-servers =\n    pypi\n    local\n", "username = __token__\n", "repository: http://127.0.0.1:1/\n", "[local]\n"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the copy lost %q:\n%s", kept, got)
		}
	}
}

// TestMaskConfigYarnrc: Yarn's tokens, at the top and under a registry,
// are masked; the registry settings stay.
func TestMaskConfigYarnrc(t *testing.T) {
	in := "npmRegistryServer: \"http://127.0.0.1:1/\"\nnpmAuthToken: FAKE-YARN-TOKEN\nnpmRegistries:\n  \"//npm.example\":\n    npmAuthIdent: \"me:FAKE-IDENT\"\n    npmAlwaysAuth: true\nenableTelemetry: false\n"
	got := string(MaskConfig([]byte(in), FormatYarnrc))
	for _, secret := range []string{"FAKE-YARN-TOKEN", "FAKE-IDENT"} {
		if strings.Contains(got, secret) {
			t.Errorf("the copy holds %s:\n%s", secret, got)
		}
	}
	for _, kept := range []string{"npmRegistryServer: \"http://127.0.0.1:1/\"\n", "  \"//npm.example\":\n", "    npmAlwaysAuth: true\n", "enableTelemetry: false\n", "npmAuthToken: SBX_MASKED\n"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the copy lost %q:\n%s", kept, got)
		}
	}
}

func TestMaskConfigYarnrcV1(t *testing.T) {
	in := "registry \"https://registry.example/\"\n" +
		"\"//registry.yarnpkg.com/:_authToken\" FAKE-Y1-TOKEN\n" +
		"  _auth \"RkFLRS1ZMQ==\"\n" +
		"//npm.example/:_password=FAKE-Y1-PASS\n" +
		"# \"//old.example/:_authToken\" FAKE-Y1-OLD\n" +
		"https-proxy \"http://me:FAKE-Y1-PROXY@proxy.example:3128\"\n" +
		"lastUpdateCheck 1700000000000\n" +
		"yarn-offline-mirror \"./mirror\"\n"
	got := string(MaskConfig([]byte(in), FormatYarnrcV1))
	for _, secret := range []string{"FAKE-Y1-TOKEN", "RkFLRS1ZMQ==", "FAKE-Y1-PASS", "FAKE-Y1-OLD", "FAKE-Y1-PROXY"} {
		if strings.Contains(got, secret) {
			t.Errorf("the copy holds %s:\n%s", secret, got)
		}
	}
	for _, kept := range []string{"registry \"https://registry.example/\"\n", "\"//registry.yarnpkg.com/:_authToken\" SBX_MASKED\n", "  _auth SBX_MASKED\n", "lastUpdateCheck 1700000000000\n", "yarn-offline-mirror \"./mirror\"\n", "https-proxy \"http://me:SBX_MASKED@proxy.example:3128\"\n"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the copy lost %q:\n%s", kept, got)
		}
	}
}
