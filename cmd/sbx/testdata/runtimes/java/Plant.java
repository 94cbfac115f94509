import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** The sbx runtime-matrix fixture: exits 0 when SBX_PLANT's refusal happened (or none was asked for). */
public class Plant {
    static String proxyGet(String url) throws Exception {
        URI proxy = URI.create(System.getenv("HTTP_PROXY"));
        try (Socket c = new Socket(proxy.getHost(), proxy.getPort())) {
            OutputStream out = c.getOutputStream();
            String host = URI.create(url).getAuthority();
            out.write(("GET " + url + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            return new BufferedReader(new InputStreamReader(c.getInputStream(), StandardCharsets.US_ASCII)).readLine();
        }
    }

    public static void main(String[] args) throws Exception {
        if (1 + 1 != 2) {
            throw new AssertionError("arithmetic");
        }
        String plant = System.getenv().getOrDefault("SBX_PLANT", "");
        switch (plant) {
            case "read":
                try {
                    Files.readAllBytes(Path.of(System.getenv("SBX_PLANT_PATH")));
                    throw new AssertionError("the denied file was read");
                } catch (java.io.IOException expected) {
                }
                break;
            case "net":
                String line = proxyGet(System.getenv("SBX_PLANT_URL"));
                if (line == null || !line.contains(" 403 ")) {
                    throw new AssertionError("proxy answered " + line);
                }
                break;
            case "unshare":
                Process p = new ProcessBuilder("/usr/bin/unshare", "--user", "true").start();
                if (p.waitFor() == 0) {
                    throw new AssertionError("unshare --user succeeded");
                }
                break;
            default:
        }
        System.out.println("ok");
    }
}
