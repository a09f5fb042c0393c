/// The JavaScript a query server process evaluates once at start: CouchDB's query server
/// protocol (one JSON command a line, one answer a line) and the functions CouchDB gives design
/// documents' code (`emit`, `log`, `sum`, `toJSON`, `isArray`, CommonJS `require`). Written for
/// syncd after the behaviour of CouchDB's `share/server` (loop.js, views.js, filter.js,
/// validate.js, util.js); ES5, as Duktape runs it.
///
/// The prelude answers every command, errors included; `__syncd_answer(line)` returns the answer
/// line, preceded by the `["log", message]` lines the command's functions logged.
///
/// One process runs the functions of every database's design documents, some of them written
/// on other nodes: once the prelude is set up, the global object, the built-in constructors and
/// their prototypes are frozen, and so is each design document, so no function can change what
/// another one (or the prelude) runs with.
enum Prelude {
    static let source = #"""
    (function (global) {
      var evaluate = eval;  // an indirect eval: global scope, no access to this closure
      var designDocuments = {};
      var mapFunctions = [];
      var viewLibrary = null;
      var libraryModules = {};
      var emitted = null;
      var logged = [];

      function fail(error, reason) { return ['error', error, reason]; }

      function describe(value) {
        if (value === undefined) return 'undefined';
        try { return JSON.stringify(value); } catch (e) { return String(value); }
      }

      global.log = function (message) {
        if (typeof message !== 'string') message = describe(message);
        logged.push(JSON.stringify(['log', message]));
      };
      global.emit = function (key, value) {
        if (emitted === null) throw fail('emit_outside_map', 'emit is only for map functions');
        emitted.push([key === undefined ? null : key, value === undefined ? null : value]);
      };
      global.sum = function (values) {
        var total = 0;
        for (var i = 0; i < values.length; i++) total += values[i];
        return total;
      };
      global.toJSON = function (value) { return JSON.stringify(value); };
      global.isArray = function (value) { return Object.prototype.toString.call(value) === '[object Array]'; };
      // Nothing of the host beyond the language: no engine internals.
      delete global.Duktape;

      function freeze(value) {
        if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
          Object.freeze(value);
          for (var key in value) if (Object.prototype.hasOwnProperty.call(value, key)) freeze(value[key]);
        }
        return value;
      }

      // CommonJS modules: `require('lib/a')` runs the string at that path of properties from
      // `root` (the design document; for views, {views: {lib: ...}}) once, and answers its exports.
      // './' and '../' are relative to the requiring module's place.
      function makeRequire(root, cache) {
        function resolve(names, from) {
          var place = from;
          for (var i = 0; i < names.length; i++) {
            var name = names[i];
            if (name === '..') {
              if (!(place && place.parent && place.parent.parent)) throw fail('invalid_require_path', 'Object has no parent ' + describe(place && place.value));
              place = { value: place.parent.value, parent: place.parent.parent, id: place.id.slice(0, place.id.lastIndexOf('/')) };
            } else if (name === '.') {
              if (!(place && place.parent)) throw fail('invalid_require_path', 'Object has no parent ' + describe(place && place.value));
            } else {
              if (i === 0) place = { value: root, parent: null, id: '' };
              if (place.value === null || typeof place.value !== 'object' || place.value[name] === undefined) {
                throw fail('invalid_require_path', 'Object has no property "' + name + '". ' + describe(place.value));
              }
              place = { value: place.value[name], parent: place, id: place.id ? place.id + '/' + name : name };
            }
          }
          if (!place || typeof place.value !== 'string') throw fail('invalid_require_path', 'Must require a JavaScript string, not: ' + typeof (place && place.value));
          return place;
        }
        function require(name, from) {
          var module = resolve(String(name).split('/'), from);
          if (!Object.prototype.hasOwnProperty.call(cache, module.id)) {
            var record = { id: module.id, exports: {}, current: module.value, parent: module.parent };
            cache[module.id] = record.exports;  // before it runs: a circular require gets what exists so far
            var body;
            try {
              body = evaluate('(function (module, exports, require) { ' + module.value + '\n})');
            } catch (e) {
              throw fail('compilation_error', "Module require('" + name + "') raised error " + String(e));
            }
            body.call(null, record, record.exports, function (inner) { return require(inner, module.parent); });
            cache[module.id] = record.exports;
          }
          return cache[module.id];
        }
        return function (name) { return require(name, null); };
      }

      function viewRoot(library) { return { views: { lib: library === undefined ? null : library } }; }

      function compile(source, require) {
        if (typeof source !== 'string') throw fail('compilation_error', 'Expression does not eval to a function. (' + describe(source) + ')');
        var fn;
        try {
          fn = evaluate('(function (require) { return (' + source + '\n); })')(require);
        } catch (e) {
          throw fail('compilation_error', String(e) + ' (' + source + ')');
        }
        if (typeof fn !== 'function') throw fail('compilation_error', 'Expression does not eval to a function. (' + source + ')');
        return fn;
      }

      function designFunction(id, path) {
        var entry = designDocuments[id];
        if (!entry) throw fail('query_protocol_error', 'uncached design doc: ' + id);
        var key = path.join('/');
        if (!Object.prototype.hasOwnProperty.call(entry.functions, key)) {
          var source = entry.ddoc;
          for (var i = 0; i < path.length; i++) {
            source = source === null || typeof source !== 'object' ? undefined : source[path[i]];
          }
          if (source === undefined) throw fail('not_found', 'missing function ' + key + ' on design doc ' + id);
          var require = path[0] === 'views'
            ? makeRequire(viewRoot(entry.ddoc.views && entry.ddoc.views.lib), entry.viewModules)
            : makeRequire(entry.ddoc, entry.modules);
          entry.functions[key] = compile(source, require);
        }
        return { fn: entry.functions[key], ddoc: entry.ddoc };
      }

      function mapDocument(functions, doc) {
        var results = [];
        freeze(doc);
        for (var i = 0; i < functions.length; i++) {
          emitted = [];
          try {
            functions[i](doc);
            results.push(emitted);
          } catch (error) {
            if (error === 'fatal_error') { emitted = null; throw fail('map_runtime_error', "function raised 'fatal_error'"); }
            if (error && error[0] === 'fatal') { emitted = null; throw error; }
            global.log('function raised exception (' + describe(error instanceof Error ? String(error) : error) + ') with doc._id ' + doc._id);
            results.push([]);
          }
        }
        emitted = null;
        return results;
      }

      function reduceWith(sources, keys, values, rereduce) {
        var require = makeRequire(viewRoot(viewLibrary), {});
        var results = [];
        for (var i = 0; i < sources.length; i++) results.push(compile(sources[i], require)(keys, values, rereduce));
        return [true, results];
      }

      var designCommands = {
        validate_doc_update: function (fn, ddoc, args) {
          try {
            fn.apply(ddoc, args);
            return 1;
          } catch (error) {
            if (error instanceof Error) throw error;
            return error;
          }
        },
        filters: function (fn, ddoc, args) {
          var docs = args[0], request = args[1], results = [];
          for (var i = 0; i < docs.length; i++) results.push(fn.apply(ddoc, [docs[i], request]) ? true : false);
          return [true, results];
        },
        views: function (fn, ddoc, args) {  // a view's map used as a filter (filter=_view)
          var docs = args[0], results = [];
          for (var i = 0; i < docs.length; i++) {
            var rows = mapDocument([fn], docs[i]);
            results.push(rows[0].length > 0);
          }
          return [true, results];
        }
      };

      var commands = {
        reset: function (command) { mapFunctions = []; viewLibrary = null; libraryModules = {}; return true; },
        add_lib: function (command) { viewLibrary = command[1]; libraryModules = {}; return true; },
        add_fun: function (command) {
          mapFunctions.push(compile(command[1], makeRequire(viewRoot(viewLibrary), libraryModules)));
          return true;
        },
        map_doc: function (command) { return mapDocument(mapFunctions, command[1]); },
        reduce: function (command) {
          var keys = [], values = [], rows = command[2];
          for (var i = 0; i < rows.length; i++) { keys.push(rows[i][0]); values.push(rows[i][1]); }
          return reduceWith(command[1], keys, values, false);
        },
        rereduce: function (command) { return reduceWith(command[1], null, command[2], true); },
        ddoc: function (command) {
          if (command[1] === 'new') {
            designDocuments[command[2]] = { ddoc: freeze(command[3]), functions: {}, modules: {}, viewModules: {} };
            return true;
          }
          var path = command[2];
          var found = designFunction(command[1], path);
          var handler = designCommands[path[0]];
          if (!handler) throw fail('unknown_command', 'unknown ddoc command ' + path[0]);
          return handler(found.fn, found.ddoc, command[3]);
        }
      };

      function answerForError(error) {
        if (error && error[0] === 'error' || error && error[0] === 'fatal') return ['error', String(error[1]), String(error[2])];
        if (error && error.error && error.reason) return ['error', String(error.error), String(error.reason)];
        if (error instanceof Error) return ['error', error.name, String(error.message)];
        return ['error', 'unnamed_error', describe(error)];
      }

      global.__syncd_answer = function (line) {
        logged = [];
        var answer;
        try {
          var command = JSON.parse(line);
          var handler = commands[command[0]];
          if (!handler) throw fail('unknown_command', 'unknown command ' + describe(command[0]));
          answer = JSON.stringify(handler(command));
          if (answer === undefined) answer = 'null';
        } catch (error) {
          answer = JSON.stringify(answerForError(error));
        }
        logged.push(answer);
        return logged.join('\n');
      };

      // Nothing a function does outlives it for another: built-ins and globals are fixed.
      var builtins = [Object, Function, Array, String, Number, Boolean, Date, RegExp, Error, EvalError, RangeError,
                      ReferenceError, SyntaxError, TypeError, URIError, JSON, Math];
      for (var name in { Proxy: 1, Reflect: 1, ArrayBuffer: 1, DataView: 1, Uint8Array: 1, Int8Array: 1, Uint8ClampedArray: 1,
                         Uint16Array: 1, Int16Array: 1, Uint32Array: 1, Int32Array: 1, Float32Array: 1, Float64Array: 1,
                         Symbol: 1, TextEncoder: 1, TextDecoder: 1, Buffer: 1 }) {
        if (typeof global[name] !== 'undefined') builtins.push(global[name]);
      }
      for (var i = 0; i < builtins.length; i++) {
        Object.freeze(builtins[i]);
        if (builtins[i].prototype) Object.freeze(builtins[i].prototype);
      }
      Object.freeze(global);
    })(this);
    """#
}
