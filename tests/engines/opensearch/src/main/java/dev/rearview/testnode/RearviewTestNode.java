/*
 * Rearview test harness: a single-node OpenSearch in one JVM.
 *
 * OpenSearch core, the bundled modules the tests need (netty4 transport,
 * reindex, painless, analysis-common, mapper-extras) and the k-NN plugin are
 * all loaded as classpath plugins of a Node subclass, so no distribution
 * tarball, plugin installer or Docker image is needed. Only the pure-Java
 * parts of k-NN work (the "lucene" engine); faiss/nmslib native libraries
 * are not on Maven Central.
 *
 * Usage:
 *   java -cp LIB/*:KNN/*:CLASSES dev.rearview.testnode.RearviewTestNode \
 *        --home DIR [--port N] [--watch-stdin] [-Ekey=value ...]
 *
 *   --home DIR      node home; config/, data/ and logs/ are created under it
 *   --port N        HTTP port on 127.0.0.1 (0, the default, picks a free one)
 *   --watch-stdin   exit when standard input reaches EOF (the parent died)
 *   -Ekey=value     any further node setting
 *
 * Only the lucene k-NN engine works here (faiss/nmslib native libraries are
 * not on Maven Central); a mapping whose knn_vector field would use another
 * engine is rejected up front with a 400 (NativeEngineGuardPlugin) instead of
 * hanging the first indexing request.
 *
 * Once HTTP is bound it prints one line to stdout:
 *   REARVIEW_OPENSEARCH_READY http://127.0.0.1:PORT
 * SIGTERM closes the node cleanly.
 */
package dev.rearview.testnode;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.cn.smart.HMMChineseTokenizer;
import org.apache.lucene.analysis.cn.smart.SmartChineseAnalyzer;
import org.opensearch.action.ActionRequest;
import org.opensearch.action.admin.indices.create.CreateIndexRequest;
import org.opensearch.action.admin.indices.mapping.put.PutMappingRequest;
import org.opensearch.action.admin.indices.template.put.PutComponentTemplateAction;
import org.opensearch.action.admin.indices.template.put.PutComposableIndexTemplateAction;
import org.opensearch.action.admin.indices.template.put.PutIndexTemplateRequest;
import org.opensearch.action.support.ActionFilter;
import org.opensearch.action.support.ActionFilterChain;
import org.opensearch.cluster.metadata.Template;
import org.opensearch.cluster.service.ClusterService;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.json.JsonXContent;
import org.opensearch.core.action.ActionListener;
import org.opensearch.core.action.ActionResponse;
import org.opensearch.core.common.transport.TransportAddress;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.index.IndexSettings;
import org.opensearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.opensearch.index.analysis.AbstractTokenizerFactory;
import org.opensearch.index.analysis.AnalyzerProvider;
import org.opensearch.index.analysis.TokenizerFactory;
import org.opensearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.ActionPlugin;
import org.opensearch.plugins.AnalysisPlugin;
import org.opensearch.plugins.ExtensiblePlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.tasks.Task;

/** Launcher for the embedded single-node OpenSearch used by Rearview's tests. */
public final class RearviewTestNode extends Node {

    /** Line printed on stdout once the HTTP endpoint is bound. */
    public static final String READY_MARKER = "REARVIEW_OPENSEARCH_READY";
    /** Line prefix printed on stdout when startup fails (then exit code 1). */
    public static final String FAILED_MARKER = "REARVIEW_OPENSEARCH_FAILED";

    private static final String LOG4J_CONFIG = String.join(
        "\n",
        "status = error",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.target = SYSTEM_OUT",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n",
        "rootLogger.level = ${sys:rearview.log.level:-info}",
        "rootLogger.appenderRef.console.ref = console",
        // Deprecation warnings go back to clients as headers; keep the log quiet.
        "logger.deprecation.name = org.opensearch.deprecation",
        "logger.deprecation.level = error",
        ""
    );

    private RearviewTestNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
        super(environment, plugins, true);
    }

    @Override
    protected void configureNodeAndClusterIdStateListener(ClusterService clusterService) {
        // The stock listener only feeds log4j's node-id lookup; not needed here.
    }

    /** Classpath plugins: the modules a distribution bundles, k-NN and smartcn. */
    private static List<Class<? extends Plugin>> plugins() throws ClassNotFoundException {
        String[] names = {
            "org.opensearch.transport.Netty4Plugin",
            "org.opensearch.index.reindex.ReindexPlugin",
            "org.opensearch.painless.PainlessPlugin",
            "org.opensearch.analysis.common.CommonAnalysisPlugin",
            "org.opensearch.index.mapper.MapperExtrasPlugin",
            "org.opensearch.knn.plugin.KNNPlugin",
        };
        List<Class<? extends Plugin>> result = new ArrayList<>();
        for (String name : names) {
            result.add(Class.forName(name).asSubclass(Plugin.class));
        }
        result.add(SmartChineseAnalysisPlugin.class);
        result.add(NativeEngineGuardPlugin.class);
        return result;
    }

    /**
     * Feed Painless the allowlist extensions found on the classpath (k-NN's
     * cosineSimilarity, l2Squared, ...). The plugin service only does this for
     * plugins installed from a directory, not for classpath plugins; Painless
     * keeps its allowlists in a static map, so doing it once up front works.
     */
    private static void loadPainlessExtensions() {
        ClassLoader loader = RearviewTestNode.class.getClassLoader();
        new PainlessPlugin().loadExtensions(new ExtensiblePlugin.ExtensionLoader() {
            @Override
            public <T> List<T> loadExtensions(Class<T> extensionPointType) {
                List<T> found = new ArrayList<>();
                ServiceLoader.load(extensionPointType, loader).forEach(found::add);
                return found;
            }
        });
    }

    private static Settings settings(Path home, int port, Map<String, String> extra) {
        Settings.Builder builder = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "rearview-test")
            .put("node.name", "rearview-test-node")
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", Integer.toString(port))
            .put("transport.port", "0")
            // A test node: no disk watermarks, no real-memory breaker on a small heap,
            // wildcard deletes allowed for cleanup between tests.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("indices.breaker.total.use_real_memory", false)
            .put("action.destructive_requires_name", false)
            .put("bootstrap.memory_lock", false)
            // k-NN: only the pure-Java lucene engine is usable (no faiss/nmslib
            // native libraries); keep its native-memory machinery small anyway.
            .put("knn.algo_param.index_thread_qty", 1)
            .put("knn.memory.circuit_breaker.enabled", true);
        for (Map.Entry<String, String> e : extra.entrySet()) {
            builder.put(e.getKey(), e.getValue());
        }
        return builder.build();
    }

    private static void writeLoggingConfig(Path configDir) throws IOException {
        Files.createDirectories(configDir);
        Files.write(configDir.resolve("log4j2.properties"), LOG4J_CONFIG.getBytes(StandardCharsets.UTF_8));
    }

    private static void usage(String message) {
        System.err.println("error: " + message);
        System.err.println("usage: RearviewTestNode --home DIR [--port N] [--watch-stdin] [-Ekey=value ...]");
        System.exit(64);
    }

    /** Entry point; see the file header for the arguments. */
    public static void main(String[] args) throws Exception {
        // Must be set before log4j initialises: the shutdown hook below logs.
        System.setProperty("log4j.shutdownHookEnabled", "false");
        System.setProperty("log4j2.disable.jmx", "true");

        Path home = null;
        int port = 0;
        boolean watchStdin = false;
        Map<String, String> extra = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (arg.equals("--home") && i + 1 < args.length) {
                home = Paths.get(args[++i]).toAbsolutePath();
            } else if (arg.equals("--port") && i + 1 < args.length) {
                port = Integer.parseInt(args[++i]);
            } else if (arg.equals("--watch-stdin")) {
                watchStdin = true;
            } else if (arg.startsWith("-E") && arg.indexOf('=') > 2) {
                int eq = arg.indexOf('=');
                extra.put(arg.substring(2, eq), arg.substring(eq + 1));
            } else {
                usage("unknown argument: " + arg);
            }
        }
        if (home == null) {
            usage("--home is required");
        }

        // LogConfigurator routes System.out/err into log4j; keep the real
        // stdout for the marker lines so they stay bare, easily parsed lines.
        PrintStream stdout = System.out;
        RearviewTestNode node;
        try {
            LogConfigurator.registerErrorListener();
            Settings settings = settings(home, port, extra);
            Path configDir = home.resolve("config");
            writeLoggingConfig(configDir);
            Environment environment = InternalSettingsPreparer.prepareEnvironment(
                settings, Collections.emptyMap(), configDir, () -> "rearview-test-node");
            LogConfigurator.setNodeName("rearview-test-node");
            LogConfigurator.configure(environment);
            loadPainlessExtensions();
            node = new RearviewTestNode(environment, plugins());
        } catch (Throwable t) {
            failStartup(stdout, t);
            return;
        }

        // All of OpenSearch's threads are daemons: main parks on this latch, as
        // the stock Bootstrap does, until the shutdown hook releases it.
        CountDownLatch keepAlive = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(10, TimeUnit.SECONDS);
            } catch (IOException | InterruptedException e) {
                stdout.println("rearview: error while closing node: " + e);
            } finally {
                keepAlive.countDown();
            }
        }, "rearview-node-shutdown"));

        TransportAddress bound;
        try {
            node.start();
            bound = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress();
        } catch (Throwable t) {
            failStartup(stdout, t);
            return;
        }
        stdout.println(READY_MARKER + " http://127.0.0.1:" + bound.getPort());
        stdout.flush();

        if (watchStdin) {
            Thread watcher = new Thread(() -> {
                InputStream in = System.in;
                byte[] buf = new byte[256];
                try {
                    while (in.read(buf) >= 0) {
                        // Discard; only EOF matters.
                    }
                } catch (IOException e) {
                    // Treat a broken stdin like EOF.
                }
                stdout.println("rearview: stdin closed, shutting down");
                stdout.flush();
                System.exit(0);
            }, "rearview-stdin-watch");
            watcher.setDaemon(true);
            watcher.start();
        }
        keepAlive.await();
    }

    /** Print the cause chain on one marker line, then the trace, and exit 1. */
    private static void failStartup(PrintStream out, Throwable t) {
        StringBuilder line = new StringBuilder(FAILED_MARKER);
        for (Throwable c = t; c != null; c = c.getCause()) {
            line.append(c == t ? " " : " | caused by: ").append(c);
        }
        out.println(line.toString().replace('\n', ' '));
        t.printStackTrace(out);
        out.flush();
        System.exit(1);
    }

    /**
     * Registers Lucene's SmartChineseAnalyzer as analyzer {@code smartcn} and its
     * tokenizer as {@code smartcn_tokenizer} (the names the official
     * analysis-smartcn plugin uses; that plugin is not on Maven Central).
     */
    public static final class SmartChineseAnalysisPlugin extends Plugin implements AnalysisPlugin {

        /** Created reflectively by the plugin service. */
        public SmartChineseAnalysisPlugin() {}

        @Override
        public Map<String, AnalysisProvider<AnalyzerProvider<? extends Analyzer>>> getAnalyzers() {
            AnalysisProvider<AnalyzerProvider<? extends Analyzer>> provider =
                (IndexSettings indexSettings, Environment env, String name, Settings settings) ->
                    new AbstractIndexAnalyzerProvider<SmartChineseAnalyzer>(indexSettings, name, settings) {
                        private final SmartChineseAnalyzer analyzer = new SmartChineseAnalyzer();

                        @Override
                        public SmartChineseAnalyzer get() {
                            return analyzer;
                        }
                    };
            return Collections.singletonMap("smartcn", provider);
        }

        @Override
        public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
            AnalysisProvider<TokenizerFactory> provider =
                (IndexSettings indexSettings, Environment env, String name, Settings settings) ->
                    new AbstractTokenizerFactory(indexSettings, settings, name) {
                        @Override
                        public Tokenizer create() {
                            return new HMMChineseTokenizer();
                        }
                    };
            return Collections.singletonMap("smartcn_tokenizer", provider);
        }
    }

    /**
     * Rejects mappings (index creation, put-mapping, templates) with a
     * knn_vector field that does not use {@code "method": {"engine": "lucene"}}.
     * k-NN 2.19 defaults to faiss, whose native library this node lacks; without
     * this guard the index is created but the first refresh throws
     * UnsatisfiedLinkError on a write thread and the request never answers.
     */
    public static final class NativeEngineGuardPlugin extends Plugin implements ActionPlugin {

        /** Created reflectively by the plugin service. */
        public NativeEngineGuardPlugin() {}

        @Override
        public List<ActionFilter> getActionFilters() {
            return Collections.singletonList(new ActionFilter() {
                @Override
                public int order() {
                    return Integer.MIN_VALUE;
                }

                @Override
                public <Request extends ActionRequest, Response extends ActionResponse> void apply(
                    Task task,
                    String action,
                    Request request,
                    ActionListener<Response> listener,
                    ActionFilterChain<Request, Response> chain
                ) {
                    String problem = checkMappings(mappingsOf(request));
                    if (problem != null) {
                        listener.onFailure(new IllegalArgumentException(problem));
                    } else {
                        chain.proceed(task, action, request, listener);
                    }
                }
            });
        }

        private static String mappingsOf(ActionRequest request) {
            if (request instanceof CreateIndexRequest) {
                return ((CreateIndexRequest) request).mappings();
            } else if (request instanceof PutMappingRequest) {
                return ((PutMappingRequest) request).source();
            } else if (request instanceof PutIndexTemplateRequest) {
                return ((PutIndexTemplateRequest) request).mappings();
            } else if (request instanceof PutComposableIndexTemplateAction.Request) {
                PutComposableIndexTemplateAction.Request r = (PutComposableIndexTemplateAction.Request) request;
                return r.indexTemplate() == null ? null : templateMappings(r.indexTemplate().template());
            } else if (request instanceof PutComponentTemplateAction.Request) {
                PutComponentTemplateAction.Request r = (PutComponentTemplateAction.Request) request;
                return r.componentTemplate() == null ? null : templateMappings(r.componentTemplate().template());
            }
            return null;
        }

        private static String templateMappings(Template template) {
            return template == null || template.mappings() == null ? null : template.mappings().string();
        }

        /** Returns a message naming the first offending field, or null. */
        static String checkMappings(String json) {
            if (json == null || json.isEmpty() || !json.contains("knn_vector")) {
                return null;
            }
            Map<String, Object> map;
            try {
                map = XContentHelper.convertToMap(JsonXContent.jsonXContent, json, false);
            } catch (RuntimeException e) {
                return null; // let OpenSearch report its own parse error
            }
            return walk("", map);
        }

        private static String walk(String name, Object node) {
            if (node instanceof Map) {
                Map<?, ?> map = (Map<?, ?>) node;
                if ("knn_vector".equals(map.get("type"))) {
                    Object method = map.get("method");
                    Object engine = method instanceof Map ? ((Map<?, ?>) method).get("engine") : null;
                    if (map.containsKey("model_id") || !"lucene".equals(engine)) {
                        return "Rearview test node: knn_vector field ["
                            + name
                            + "] would use k-NN engine ["
                            + (map.containsKey("model_id") ? "model" : engine == null ? "default (faiss)" : engine)
                            + "], but this node has no faiss/nmslib native libraries; "
                            + "set \"method\": {\"name\": \"hnsw\", \"engine\": \"lucene\", ...}";
                    }
                    return null;
                }
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    String problem = walk(String.valueOf(e.getKey()), e.getValue());
                    if (problem != null) {
                        return problem;
                    }
                }
            } else if (node instanceof List) {
                for (Object item : (List<?>) node) {
                    String problem = walk(name, item);
                    if (problem != null) {
                        return problem;
                    }
                }
            }
            return null;
        }
    }
}
