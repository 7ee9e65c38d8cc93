// @ts-check
/** @file ESLint with typescript-eslint: the lint step of `npm test` (`npm run lint`). */
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "native/", "prebuilds/", "**/*.d.ts"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // `let [a, b] = ...` where only b is reassigned stays one declaration
      "prefer-const": ["error", { destructuring: "all" }],
      // public functions check their arity against JAX's signature by reading `arguments` (src/core/check-args.ts),
      // so their declared parameters keep precise types
      "prefer-rest-params": "off",
      // a leading underscore marks a binding kept for its position (destructuring, callback arity)
      "@typescript-eslint/no-unused-vars": [
        "error",
        {
          argsIgnorePattern: "^_",
          varsIgnorePattern: "^_",
          caughtErrors: "none",
          destructuredArrayIgnorePattern: "^_",
        },
      ],
    },
  },
);
