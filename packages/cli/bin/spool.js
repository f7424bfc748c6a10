#!/usr/bin/env node
// The CLI is TypeScript run without a build step: register tsx, then load it.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
